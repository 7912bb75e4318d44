"""04-heads: kv_head_for, grouped_query_attention and kv_cache_bytes.

Each is compared with attncore: kv_head_map, grouped_query_attention and kv_cache_bytes.
"""
import numpy as np

import attncore

from .. import stand_ins
from ..probe import Case, FunctionSpec, Misconception, ResultDtype, same
from .common import (
    DRAWN,
    KEYS_AS_VALUES,
    KEYS_AS_VALUES_FIX,
    NO_SOFTMAX,
    NO_SOFTMAX_FIX,
    SCALE_AFTER_SOFTMAX,
    SCALE_AFTER_SOFTMAX_FIX,
    SCALE_FIX,
    arrays,
    integers,
    keys_not_transposed,
    output_like_queries,
    queries_for,
    rows_of_different_scales,
    scale_misconception,
    softmax_misconceptions,
    written_or_drawn,
)

ASSIGNMENT = "04-heads"
FORBIDDEN = ("attention_scores", "attention_weights", "attention", "grouped_query_attention",
             "kv_head_map", "kv_cache_bytes")

TILE = "GQA head mapping by tile instead of repeat"
TILE_FIX = ("query heads come in H_kv consecutive groups of G = H_q // H_kv: query head h reads "
            "kv head h // G. Use h // G, np.repeat(K, G, axis=0), or reshape Q to "
            "(H_kv, G, T_q, d); never h % H_kv, np.tile(K, (G, 1, 1)) or a reshape of Q to "
            "(G, H_kv, T_q, d), which deal the heads out in turn (0, 1, 0, 1, ...).")


def _tile(n_q, n_kv):
    return np.arange(n_q) % n_kv


def _layout(n_q, n_kv):
    """'heads 0-3 read kv head 0, heads 4-7 read kv head 1' for the repeat layout."""
    g = n_q // n_kv
    if g == 1:
        return "query head h reads kv head h"
    return ", ".join(f"heads {j * g}-{j * g + g - 1} read kv head {j}" for j in range(n_kv))


# ---------------------------------------------------------------- kv_head_for

def kv_head_reference(q_head, n_q_heads, n_kv_heads):
    return int(attncore.kv_head_map(n_q_heads, n_kv_heads)[q_head])


def _head_case(q_head, n_q, n_kv, what=""):
    g = n_q // n_kv
    text = f"query head {q_head} of {n_q}, over {n_kv} kv head{'s' if n_kv > 1 else ''} " \
           f"(groups of {g}){': ' + what if what else ''}"
    return Case(text, lambda: _heads(q_head, n_q, n_kv))


def _heads(q_head, n_q, n_kv):
    return {"q_head": int(q_head), "n_q_heads": int(n_q), "n_kv_heads": int(n_kv)}


def _drawn_head_case(description, seed, written, draw):
    """A hidden case whose heads are drawn when graded: written = (q_head, n_q, n_kv) for a
    learner's own check, draw(rng) -> (q_head, n_q, n_kv) (common.written_or_drawn)."""
    return Case(description, lambda: written_or_drawn(
        seed, lambda: _heads(*written), lambda rng: _heads(*draw(rng))))


def _multi_head(rng):
    """A query head from 1 to n - 1 of n (2 to 16) query and kv heads."""
    n = int(rng.integers(2, 17))
    return int(rng.integers(1, n)), n, n


def _multi_query(rng):
    """The last query head of 3 to 64, over one kv head (of 2, round(1 / 2) would be 0)."""
    n = int(rng.integers(3, 65))
    return n - 1, n, 1


def _first_of_a_later_group(rng):
    """The first query head of a group past the first, groups of 2 to 4 over 3 to 8 kv heads,
    drawn until the head's number mod n_kv and over n_kv both differ from its group."""
    while True:
        n_kv, group = int(rng.integers(3, 9)), int(rng.integers(2, 5))
        q_head = group * int(rng.integers(1, n_kv))
        if q_head // group not in (q_head % n_kv, q_head // n_kv):
            return q_head, group * n_kv, n_kv


def _llama_3_8b(rng):
    """A query head one past the start of a group of Llama 3 8B's layout (32 query heads
    over 8 kv heads), drawn until its number mod 8 differs from its group."""
    while True:
        q_head = 4 * int(rng.integers(1, 8)) + 1
        if q_head % 8 != q_head // 4:
            return q_head, 32, 8


def _drawn_heads(seed):
    """A query head of n_kv * G query heads, n_kv and G from 1 to 8."""
    n_kv, group = integers(seed, 1, 8, 2)
    return {"q_head": integers(seed + 1, 0, n_kv * group - 1, 1)[0],
            "n_q_heads": n_kv * group, "n_kv_heads": n_kv}


def _tile_detail_scalar(args):
    h, n_q, n_kv = args["q_head"], args["n_q_heads"], args["n_kv_heads"]
    return (f"Your answer is q_head % n_kv_heads = {h % n_kv}. With {n_q} query heads over "
            f"{n_kv} kv heads, {_layout(n_q, n_kv)}, so query head {h} reads kv head "
            f"{h // (n_q // n_kv)}. The % deals the heads out in turn "
            f"({', '.join(str(j) for j in _tile(n_q, n_kv))}), as np.tile does.")


def _rounded_detail(args, i):
    h, g = args["q_head"], args["n_q_heads"] // args["n_kv_heads"]
    return (f"Your answer is q_head / G = {h} / {g} = {h / g:g} rounded "
            f"{['up', 'to the nearest integer'][i]}; query head {h} is in group "
            f"{h} // {g} = {h // g}.")


GROUP_INVERTED = "group size computed as n_kv_heads // n_q_heads"
GROUP_INVERTED_FIX = ("the group size is G = n_q_heads // n_kv_heads, the number of QUERY heads "
                      "that share one kv head (at least 1, since there are fewer kv heads); "
                      "query head h reads kv head h // G.")


def _head_counts(args):
    """(n_q, n_kv) of kv_head_for's or grouped_query_attention's arguments."""
    if "n_q_heads" in args:
        return args["n_q_heads"], args["n_kv_heads"]
    return args["Q"].shape[0], args["K"].shape[0]


def _group_inverted_detail(args, i=None):
    n_q, n_kv = _head_counts(args)
    return (f"With {n_q} query heads over {n_kv} kv heads your group size is "
            f"n_kv_heads / n_q_heads = {n_kv} / {n_q} = {n_kv / n_q:g} ({n_kv // n_q} with //); "
            f"the group size is {n_q} // {n_kv} = {n_q // n_kv}.")


def _group_inverted_error(args, error_type, error_message):
    """GROUP_INVERTED from an error: n_kv // n_q is 0, and dividing by it raises."""
    n_q, n_kv = _head_counts(args)
    if error_type == "ZeroDivisionError" and n_kv // n_q == 0:
        return _group_inverted_detail(args)
    return None


KV_HEAD_CASES = {
    "basic": [_head_case(6, 8, 2), _head_case(1, 8, 2),
              Case(f"query head 2 or 5 of 8, over 2 kv heads (groups of 4), in the middle of its "
                   f"group as the two above: {DRAWN}",
                   lambda: {"q_head": (2, 5)[integers(34, 0, 1, 1)[0]], "n_q_heads": 8,
                            "n_kv_heads": 2})],
    "hidden": [
        # Every hidden case draws its heads when graded, of the layout it is about.
        _drawn_head_case("query head 1 to n - 1 of n = 2 to 16, over as many kv heads (groups "
                         "of 1): multi-head attention, one kv head per query head", 81,
                         (3, 4, 4), _multi_head),
        _drawn_head_case("the last query head of 3 to 64, over 1 kv head: multi-query "
                         "attention, one kv head for all", 82, (5, 6, 1), _multi_query),
        _drawn_head_case("the first query head of a group past the first, groups of 2 to 4 "
                         "over 3 to 8 kv heads", 83, (4, 6, 3), _first_of_a_later_group),
        _drawn_head_case("a query head one past the start of its group, of 32 over 8 kv heads "
                         "(groups of 4): the layout of Llama 3 8B", 84, (13, 32, 8), _llama_3_8b),
        Case(f"1 to 8 kv heads, groups of 1 to 8: {DRAWN}", lambda: _drawn_heads(16)),
    ],
}

KV_HEAD_MISCONCEPTIONS = [
    Misconception(TILE, TILE_FIX,
                  variants=(lambda q_head, n_q_heads, n_kv_heads: q_head % n_kv_heads,),
                  detail=lambda args, i: _tile_detail_scalar(args)),
    Misconception(
        "divided by the number of kv heads instead of the group size",
        "the group size is G = n_q_heads // n_kv_heads (query heads per kv head); the kv head "
        "is q_head // G, not q_head // n_kv_heads.",
        variants=(lambda q_head, n_q_heads, n_kv_heads: q_head // n_kv_heads,),
        detail=lambda a, i: (f"Your answer is q_head // n_kv_heads = "
                             f"{a['q_head'] // a['n_kv_heads']}; the group size is "
                             f"{a['n_q_heads']} // {a['n_kv_heads']} = "
                             f"{a['n_q_heads'] // a['n_kv_heads']}.")),
    Misconception(GROUP_INVERTED, GROUP_INVERTED_FIX,
                  variants=(lambda q_head, n_q_heads, n_kv_heads:
                            q_head // (n_kv_heads / n_q_heads),
                            lambda q_head, n_q_heads, n_kv_heads:
                            q_head * (n_kv_heads // n_q_heads)),
                  detail=_group_inverted_detail, on_error=_group_inverted_error),
    Misconception(
        "group index rounded up instead of down",
        "use integer division q_head // G (it rounds down): query heads 0 to G-1 all read kv "
        "head 0. round() and ceil() move the last heads of a group into the next one.",
        variants=tuple(lambda q_head, n_q_heads, n_kv_heads, f=f: f(q_head / (n_q_heads //
                                                                              n_kv_heads))
                       for f in (np.ceil, round)),
        detail=_rounded_detail),
    Misconception(
        "query heads counted from 1 (off by one)",
        "query heads are numbered from 0: head q_head belongs to group q_head // G. (q_head + 1) "
        "// G moves the last head of every group into the next one.",
        variants=(lambda q_head, n_q_heads, n_kv_heads: (q_head + 1) // (n_q_heads // n_kv_heads),
                  lambda q_head, n_q_heads, n_kv_heads: (q_head - 1) // (n_q_heads // n_kv_heads)),
        detail="Your answer matches (q_head + 1) // G or (q_head - 1) // G."),
]


# ---------------------------------------------------------------- grouped_query_attention

def gqa(seed, h_q, h_kv, t_q, t_k, d, d_v, **kw):
    q, k, v = arrays(seed, (h_q, t_q, d), (h_kv, t_k, d), (h_kv, t_k, d_v), **kw)
    return {"Q": q, "K": k, "V": v}


def gqa_row_scales(seed, h_q, h_kv, t_q, t_k, d, d_v, dtype=np.float64):
    """Scores of every query head with rows at offsets -1e4, 0, 1e4, -50 (needs d >= t_k)."""
    args = gqa(seed, h_q, h_kv, t_q, t_k, d, d_v)
    for h, j in enumerate(attncore.kv_head_map(h_q, h_kv)):
        target = rows_of_different_scales(seed + h, t_q, t_k)
        args["Q"][h] = queries_for(args["K"][j], target)
    return {name: a.astype(dtype) for name, a in args.items()}


def _gqa_with(index=attncore.kv_head_map, softmax_fn=attncore.softmax,
              factor=lambda d: 1 / np.sqrt(d)):
    """A learner's GQA: the kv heads chosen by index(H_q, H_kv), a softmax and a scale."""
    def run(Q, K, V):
        kv = index(Q.shape[0], K.shape[0])
        S = Q @ np.swapaxes(K[kv], -1, -2) * factor(Q.shape[-1])
        return (softmax_fn(S) @ V[kv]).astype(Q.dtype)
    return run


def _gqa_scale_after_softmax(scaled):
    """softmax of the (scaled or raw) scores, the output divided by sqrt(d) afterwards."""
    def run(Q, K, V):
        d = Q.shape[-1]
        return (_gqa_with(factor=lambda d: 1 / np.sqrt(d) if scaled else 1.0)(Q, K, V)
                / np.sqrt(d)).astype(Q.dtype)
    return run


def _gqa_weights_transposed_in_output(Q, K, V):
    """A^T V in every head: runs where T_q = T_k, raises numpy's matmul error elsewhere."""
    kv = attncore.kv_head_map(Q.shape[0], K.shape[0])
    A = attncore.softmax(Q @ np.swapaxes(K[kv], -1, -2) / np.sqrt(Q.shape[-1]))
    return (np.swapaxes(A, -1, -2) @ V[kv]).astype(Q.dtype)


def _heads_read(args, got):
    """For each query head, the kv head whose (correct) attention equals got[h] (an int), or
    the pair (kv head of the keys, kv head of the values) when keys and values come from
    different kv heads; None when some head matches no such choice."""
    Q, K, V = args["Q"], args["K"], args["V"]
    got = np.asarray(got)
    if got.shape != (Q.shape[0], Q.shape[1], V.shape[-1]):
        return None
    read = []
    for h in range(Q.shape[0]):
        pairs = [(a, b) for a in range(K.shape[0]) for b in range(K.shape[0])
                 if same(got[h], attncore.attention(Q[h], K[a], V[b]))]
        if len(pairs) != 1:
            return None
        a, b = pairs[0]
        read.append(a if a == b else (a, b))
    return read


def _mapping_detect(expected_mapping):
    """Detector: the learner's query heads read the kv heads expected_mapping(H_q, H_kv)
    (None: any mapping other than the right one, keys and values from one kv head or not)."""
    def detect(args, got, expected):
        n_q, n_kv = args["Q"].shape[0], args["K"].shape[0]
        read, right = _heads_read(args, got), [int(j) for j in attncore.kv_head_map(n_q, n_kv)]
        if read is None or read == right:
            return None
        split = [(h, pair) for h, pair in enumerate(read) if isinstance(pair, tuple)]
        if expected_mapping is not None and read != list(expected_mapping(n_q, n_kv)):
            return None
        if split:
            h, (a, b) = split[0]
            return (f"Query head {h} of your output uses the keys of kv head {a} and the values "
                    f"of kv head {b}: keys and values must come from the same kv head, "
                    f"{right[h]} here ({_layout(n_q, n_kv)}). Check the index of V (V[h // G], "
                    f"like K's).")
        return (f"Query heads 0..{n_q - 1} of your output read kv heads {read}; with H_q = {n_q} "
                f"and H_kv = {n_kv} they must read {right} ({_layout(n_q, n_kv)}).")
    return detect


GQA_CASES = {
    "basic": [
        # square first: A^T V runs there, and shows what it computes
        Case("4 query heads over 2 kv heads, T_q = 3, T_k = 3, d = 4, d_v = 2: square",
             lambda: gqa(8, 4, 2, 3, 3, 4, 2)),
        Case("4 query heads over 2 kv heads, T_q = 2, T_k = 3, d = 4, d_v = 3",
             lambda: gqa(1, 4, 2, 2, 3, 4, 3)),
    ],
    "hidden": [
        Case("multi-head: 3 query heads over 3 kv heads, T_q = 3, T_k = 4, d = 4, d_v = 2",
             lambda: gqa(2, 3, 3, 3, 4, 4, 2)),
        Case("multi-query: 4 query heads over 1 kv head, a decoding step T_q = 1, T_k = 5, "
             "d = 8, d_v = 3", lambda: gqa(3, 4, 1, 1, 5, 8, 3)),
        Case("8 query heads over 2 kv heads, T_q = 2, T_k = 5, d = 8, d_v = 4",
             lambda: gqa(4, 8, 2, 2, 5, 8, 4)),
        Case("6 query heads over 3 kv heads, T_q = 4, T_k = 3, d = 16, d_v = 2, float32",
             lambda: gqa(5, 6, 3, 4, 3, 16, 2, dtype=np.float32)),
    ],
    "extreme": [
        Case("6 query heads over 2 kv heads, T_q = 4, T_k = 4, d = 8, d_v = 3: in every head "
             "the score rows sit at offsets -1e4, 0, 1e4, -50",
             lambda: gqa_row_scales(6, 6, 2, 4, 4, 8, 3)),
        Case("8 query heads over 2 kv heads, T_q = 3, T_k = 6, d = 16, d_v = 2, float32, "
             "scores in the hundreds",
             lambda: gqa(7, 8, 2, 3, 6, 16, 2, dtype=np.float32, scale=12.0)),
    ],
}

GQA_MISCONCEPTIONS = [
    output_like_queries(),
    Misconception(KEYS_AS_VALUES, KEYS_AS_VALUES_FIX,
                  variants=(lambda Q, K, V: _gqa_with()(Q, K, K),)),
    Misconception(TILE, TILE_FIX, detect=_mapping_detect(_tile)),
    Misconception(
        "every query head reads kv head 0",
        "query head h reads kv head h // G with G = H_q // H_kv; pick K[h // G] and V[h // G] "
        "inside the loop over query heads, not K[0] and V[0].",
        detect=_mapping_detect(lambda n_q, n_kv: np.zeros(n_q, int))),
    Misconception(
        "query heads read the wrong kv heads",
        "query head h reads kv head h // G with G = H_q // H_kv (consecutive groups of G query "
        "heads share one kv head).",
        detect=_mapping_detect(None)),
    Misconception(GROUP_INVERTED, GROUP_INVERTED_FIX, on_error=_group_inverted_error),
    keys_not_transposed(),
    Misconception(NO_SOFTMAX, NO_SOFTMAX_FIX, variants=(
        _gqa_with(softmax_fn=lambda S: S), _gqa_with(softmax_fn=lambda S: S, factor=lambda d: 1.0)),
        detail="Your output is each head's scores times its values: no softmax turned the "
               "scores into weights first."),
    Misconception(SCALE_AFTER_SOFTMAX, SCALE_AFTER_SOFTMAX_FIX,
                  variants=(_gqa_scale_after_softmax(False), _gqa_scale_after_softmax(True)),
                  detail="Your output is softmax(scores) @ V divided by sqrt(d) afterwards: "
                         "the weights of each row sum to 1/sqrt(d), not 1."),
    Misconception("weights transposed in the output (A^T V)",
                  "in every head, output row i is sum_j A[i, j] v_j, that is A @ V with A of shape "
                  "(T_q, T_k); A.T @ V (or swapaxes(A, -1, -2) @ V) mixes the values with a column "
                  "of A instead, and only runs when T_q = T_k.",
                  variants=(_gqa_weights_transposed_in_output,)),
    *softmax_misconceptions(lambda fn: _gqa_with(softmax_fn=fn), axes=(-2, 0)),
    scale_misconception(lambda c: _gqa_with(factor=lambda d: c),
                        fix=SCALE_FIX.replace("d_k = Q.shape[-1]", "d = Q.shape[-1]")),
]


# ---------------------------------------------------------------- kv_cache_bytes

PARAMETERS = ("n_layers", "n_kv_heads", "head_dim", "seq_len", "batch", "bytes_per_value")


def _cache_case(description, n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value):
    values = dict(zip(PARAMETERS,
                      (n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value)))
    return Case(description, lambda: dict(values))


def _model_case(description, seed, layout, written, tokens, batches):
    """A real model's cache: layout = (n_layers, n_kv_heads, head_dim, bytes_per_value), a
    context of `tokens` (low, high) and a batch of `batches` (low, high) drawn when graded,
    written = (seq_len, batch) for a learner's own check."""
    n_layers, n_kv_heads, head_dim, bytes_per_value = layout

    def sizes(seq_len, batch):
        return dict(zip(PARAMETERS, (n_layers, n_kv_heads, head_dim, int(seq_len), int(batch),
                                     bytes_per_value)))

    return Case(description, lambda: written_or_drawn(
        seed, lambda: sizes(*written),
        lambda rng: sizes(rng.integers(tokens[0], tokens[1] + 1),
                          rng.integers(batches[0], batches[1] + 1))))


KV_CACHE_CASES = {
    "basic": [
        _cache_case("a toy model: 3 layers, 5 kv heads, head_dim 6, 7 tokens, batch 1, "
                    "1 byte per value (fp8)", 3, 5, 6, 7, 1, 1),
        _cache_case("a toy model: 3 layers, 5 kv heads, head_dim 6, 7 tokens, batch 1, "
                    "4 bytes per value (fp32)", 3, 5, 6, 7, 1, 4),
        _cache_case("a toy model: 3 layers, 5 kv heads, head_dim 6, 7 tokens, batch 9, "
                    "4 bytes per value (fp32)", 3, 5, 6, 7, 9, 4),
        Case(f"a toy model, every size from 2 to 9: {DRAWN}",
             lambda: dict(zip(PARAMETERS, integers(35, 2, 9, len(PARAMETERS))))),
    ],
    "hidden": [
        # A context and a batch drawn when graded; Llama 2 7B's cache is 2**31 bytes or more
        # in every draw (an int32 product wraps around).
        _model_case("Llama 2 7B (multi-head): 32 layers, 32 kv heads, head_dim 128, fp16, "
                    "2048 to 4096 tokens, batch 1 to 8, at least 4096 tokens in all", 85,
                    (32, 32, 128, 2), (4096, 1), (2048, 4096), (2, 8)),
        _model_case("Llama 3 8B (GQA): 32 layers, 8 kv heads, head_dim 128, fp16, 4096 to "
                    "8192 tokens, batch 1 to 4", 86, (32, 8, 128, 2), (8192, 1), (4096, 8192),
                    (1, 4)),
        _model_case("Mistral 7B (GQA): 32 layers, 8 kv heads, head_dim 128, fp16, 2048 to 4096 "
                    "tokens, batch 4 to 16", 87, (32, 8, 128, 2), (4096, 8), (2048, 4096),
                    (4, 16)),
        _model_case("Llama 2 70B (GQA): 80 layers, 8 kv heads, head_dim 128, fp8, 2048 to 4096 "
                    "tokens, batch 2 to 8", 88, (80, 8, 128, 1), (4096, 4), (2048, 4096), (2, 8)),
        Case(f"a made-up model, every size from 1 to 99: {DRAWN}",
             lambda: dict(zip(PARAMETERS, integers(17, 1, 99, len(PARAMETERS))))),
    ],
}


def _ratio(got, expected):
    got = float(np.asarray(got))
    return got / expected if expected else None


def _units_detect(args, got, expected):
    r = _ratio(got, expected)
    for unit, name in ((2**30, "GiB"), (1e9, "GB"), (2**20, "MiB"), (1e6, "MB"), (2**10, "KiB"),
                       (1e3, "kB")):
        if r is not None and np.isclose(r, 1 / unit, rtol=1e-2):
            return (f"Your result is the size in {name} ({float(np.asarray(got)):.6g}); the "
                    f"function returns the number of bytes, {expected}.")
    return None


def _factor_detect(args, got, expected):
    r = _ratio(got, expected)
    if r is None or r <= 0 or np.isclose(r, 1):
        return None
    k, too = (r, "too many") if r > 1 else (1 / r, "missing")
    if not np.isclose(k, round(k), rtol=1e-9):
        return None
    k = int(round(k))
    suspects = [f"{p} = {args[p]}" for p in PARAMETERS if args[p] == k]
    hint = (f" ({' or '.join(suspects)}?)" if suspects else
            " (a constant such as 2 bytes per value, or a parameter counted twice?)" if r > 1
            else "")
    relation = f"{k} times the expected {expected}" if r > 1 else \
        f"the expected {expected} divided by {k}"
    return f"Your result is {float(np.asarray(got)):.6g}, {relation}: a factor of {k} {too}{hint}."


def _half_detect(args, got, expected):
    if same(got, expected // 2):
        return (f"Your result {got} is exactly half of the {expected} bytes expected: it counts "
                f"the keys or the values, not both.")
    return None


KV_CACHE_MISCONCEPTIONS = [
    Misconception(
        "KV cache size missing the factor for keys and values",
        "the cache holds a key vector AND a value vector for every layer, kv head and token: "
        "multiply by 2 (the factor for K and V) as well as by the six parameters.",
        detect=_half_detect),
    Misconception(
        "size in GiB instead of bytes",
        "return the number of bytes as an int; divide by 2**30 only when you print it.",
        detect=_units_detect),
    Misconception(
        "a factor missing or counted twice in the product",
        "the size is the product 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * "
        "bytes_per_value, with each parameter exactly once, no other constant, and "
        "bytes_per_value as given (not a fixed 2 for fp16).",
        detect=_factor_detect),
]


SPECS = [
    FunctionSpec(
        name="kv_head_for",
        plain=(stand_ins.kv_head_for,),
        axes={},
        stand_in=stand_ins.kv_head_for,
        reference=kv_head_reference,
        suites=KV_HEAD_CASES,
        misconceptions=KV_HEAD_MISCONCEPTIONS,
        result_dtype=ResultDtype.EXACT_INT,  # 1.0 is the right head, but not an int
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="grouped_query_attention",
        plain=(stand_ins.grouped_query_attention, stand_ins.grouped_query_attention_by_head),
        axes={"Q": ("H_q", "T_q", "d"), "K": ("H_kv", "T_k", "d"), "V": ("H_kv", "T_k", "d_v"),
              "return": ("H_q", "T_q", "d_v")},
        reference=lambda Q, K, V: attncore.grouped_query_attention(Q, K, V),
        suites=GQA_CASES,
        misconceptions=GQA_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="kv_cache_bytes",
        plain=(stand_ins.kv_cache_bytes,),
        axes={},
        reference=attncore.kv_cache_bytes,
        suites=KV_CACHE_CASES,
        misconceptions=KV_CACHE_MISCONCEPTIONS,
        result_dtype=ResultDtype.EXACT_INT,
        forbidden=FORBIDDEN,
    ),
]
