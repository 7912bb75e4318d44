"""The registry of graded functions keeps its shape when the suite modules are reorganised.

engine.suites builds ASSIGNMENTS and SPECS from one module (or package) per assignment;
03-masking is a package of one module per function. Recorded before it was split (issue
22): every assignment's functions in notebook order and every function's suites in order,
and for 03-masking its cases per suite and its misconceptions in the order they are tried.
A change here changes what learners are graded on: update the record on purpose only.
"""
from attncore.grading.engine import ASSIGNMENTS, SPECS
from attncore.grading.engine.suites import masking

SUITES = {
    "01-convention": {"attention_scores": ["basic", "hidden"],
                      "attention_weights": ["basic", "hidden", "extreme"],
                      "attention": ["basic", "hidden", "extreme"]},
    "02-simplex": {"softmax": ["basic", "hidden", "extreme"],
                   "is_row_stochastic": ["basic", "hidden", "edge"]},
    "03-masking": {"causal_mask": ["basic", "hidden"],
                   "key_padding_mask": ["basic", "hidden"],
                   "sliding_window_mask": ["basic", "hidden"],
                   "masked_softmax": ["basic", "hidden", "empty", "extreme"]},
    "04-heads": {"kv_head_for": ["basic", "hidden"],
                 "grouped_query_attention": ["basic", "hidden", "extreme"],
                 "kv_cache_bytes": ["basic", "hidden"]},
    "05-flash": {"online_softmax_stats": ["basic", "hidden", "extreme"],
                 "flash_attention": ["basic", "hidden", "extreme", "memory"],
                 "row_from_lse": ["basic", "hidden", "extreme"]},
    "06-variants": {"softmax_one": ["basic", "hidden", "extreme"],
                    "sparsemax": ["basic", "hidden", "extreme"],
                    "linear_attention": ["basic", "hidden", "extreme"]},
    "07-real-model": {"split_heads": ["basic", "hidden"],
                      "layer_attention": ["basic", "padding", "hidden"]},
}

SHAPE = "wrong output shape or dtype"
INVERTED = "inverted mask polarity"
OFF_BY_ONE = "causal mask off by one"
NEGATIVE_SLICE = "negative slice index wraps around"
MASKING = {  # function: ({suite: number of cases}, misconceptions in the order tried)
    "causal_mask": ({"basic": 3, "hidden": 5}, [
        SHAPE, "upper instead of lower triangle (triu instead of tril)", INVERTED, OFF_BY_ONE,
        "top-left instead of bottom-right causal alignment",
        "bottom-right offset with the wrong sign", NEGATIVE_SLICE]),
    "key_padding_mask": ({"basic": 2, "hidden": 3}, [
        "padding mask on queries instead of keys", SHAPE, INVERTED, "padding on the wrong side",
        "padding boundary off by one"]),
    "sliding_window_mask": ({"basic": 2, "hidden": 5}, [
        SHAPE, "window not causal (future keys allowed)",
        "window looks forward (transposed: keys after the query)", OFF_BY_ONE,
        "window one key too wide or too narrow", INVERTED, NEGATIVE_SLICE]),
    "masked_softmax": ({"basic": 2, "hidden": 4, "empty": 2, "extreme": 5}, [
        "your code assumes 2-D input", "masked softmax over the wrong axis",
        "masking with 0 or multiplying by the mask",
        "fully masked row giving NaN or a uniform row", "finite sentinel too weak for the scores",
        INVERTED, "mask applied after softmax", "a global instead of per-row maximum",
        "unstable softmax (overflow)", "mask used as an index without broadcasting it",
        "rows that miss 1 by more than rounding allows"]),
}


def test_every_assignment_keeps_its_functions_and_suites_in_order():
    assert ASSIGNMENTS == {a: list(functions) for a, functions in SUITES.items()}
    assert list(ASSIGNMENTS) == list(SUITES)
    for functions in SUITES.values():
        for name, suites in functions.items():
            assert SPECS[name].name == name and list(SPECS[name].suites) == suites, name


def test_masking_keeps_its_cases_and_misconceptions():
    assert masking.ASSIGNMENT == "03-masking"
    assert [spec.name for spec in masking.SPECS] == list(MASKING)
    for spec in masking.SPECS:
        cases, misconceptions = MASKING[spec.name]
        assert SPECS[spec.name] is spec
        assert {suite: len(c) for suite, c in spec.suites.items()} == cases, spec.name
        assert [m.name for m in spec.misconceptions] == misconceptions, spec.name
