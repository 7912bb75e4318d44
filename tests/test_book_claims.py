"""Claims the book's prose makes that are facts of arithmetic or of the repository, checked.

Each test names the page and the sentence it holds to account, so that a change that breaks
the claim fails here rather than on a reader's screen.
"""
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from attncore import softmax
from attncore.bfloat16 import EPS as EPS_BF16
from attncore.bfloat16 import round_to_bfloat16
from attncore.invariants import default_atol

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


def page(name):
    return (BOOK / name).read_text(encoding="utf-8")


# Chapter 2, "Choosing a test tolerance": 4 n eps with bfloat16's eps reaches 1 at n = 32, so
# it cannot fail; weights computed in float32 and stored in bfloat16 stay within eps_bf16 / 2
# plus the float32 slack, whatever n is.
def test_bf16_rule_is_vacuous_from_32_keys():
    assert math.ceil(1 / (4 * EPS_BF16)) == 32
    assert 4 * 31 * EPS_BF16 < 1 <= 4 * 32 * EPS_BF16


@pytest.mark.parametrize("n", [2, 31, 32, 1000, 4096])
def test_stored_bf16_rows_meet_the_n_independent_tolerance(n):
    rng = np.random.default_rng(n)
    w32 = softmax(rng.normal(scale=3.0, size=(64, n)).astype(np.float32))
    stored = round_to_bfloat16(w32).astype(np.float64)
    err = np.abs(stored.sum(axis=-1) - 1).max()
    assert err <= EPS_BF16 / 2 + default_atol(n, np.float32)



# Chapter 2, "Entries that round to exactly 0 or exactly 1": a softmax with its max and sum in
# float32 whose weights are then stored in half precision gives an exact 1 from a score gap of
# about ln(4 / eps) (the spacing just below 1 is eps / 2), ln 2^9 in bfloat16.
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_stored_half_weight_is_exactly_one_from_a_gap_of_ln_4_over_eps(dtype):
    gaps = np.arange(0, 20, 0.001)
    top = softmax(np.stack([np.zeros_like(gaps), -gaps], axis=-1).astype(np.float32))[:, 0]
    stored = round_to_bfloat16(top) if dtype == "bfloat16" else top.astype(np.float16)
    eps = EPS_BF16 if dtype == "bfloat16" else float(np.finfo(np.float16).eps)
    first_one = gaps[np.argmax(stored == 1)]
    assert np.all(stored[gaps >= first_one] == 1)
    assert abs(first_one - math.log(4 / eps)) < 0.01


# Chapter 2, "Weights stored in bfloat16": eps_bf16 / 2 equals the float32 tolerance 4 n eps_32
# at n = 8192, exceeds it below and falls under it above.
def test_bf16_half_eps_meets_the_float32_tolerance_at_8192_keys():
    assert EPS_BF16 / 2 == default_atol(8192, np.float32)
    assert default_atol(8191, np.float32) < EPS_BF16 / 2 < default_atol(8193, np.float32)


# Chapter 2, follow-up "all scores equal": the library gives 1/n correctly rounded, which is
# exact only when n is a power of two.
def test_equal_scores_give_one_over_n_correctly_rounded():
    for n in range(1, 300):
        row = softmax(np.full(n, -3.25))
        assert np.all(row == np.float64(1) / n), n
        power_of_two = n & (n - 1) == 0
        assert (Fraction(float(row[0])) == Fraction(1, n)) == power_of_two, n


# Chapter 3, "Mask conventions across libraries": the paragraph says which rows the tests run
# and where; the rows it calls untested have no test, the optional libraries are skipped
# where they are missing, and the always-run rows need only the model-test extra.
def test_chapter_3_says_which_convention_rows_are_tested():
    text = " ".join(page("03-masking.md").split())
    tests = (ROOT / "tests" / "test_mask_conventions.py").read_text(encoding="utf-8")
    assert "`window_size` and `flash_attn_varlen_func` rows have no test yet" in text
    assert "window_size" not in tests and "varlen" not in tests
    for module in ("xformers", "flash_attn", "jax", "flax", "keras"):
        assert re.search(rf'importorskip\("{module}[".]', tests), module
    for module in ("torch", "transformers"):
        assert re.search(rf'importorskip\("{module}", reason="[^"]*model-test extra', tests), module


# Chapter 5, "Which coordinates turn together": RoPE pairing (2i, 2i+1) (RoFormer, Meta's Llama,
# written here with complex numbers) and pairing (i, i + d/2) (Hugging Face's rotate_half) give
# different scores on the same q, k, and the same scores once q and k (that is, W_Q and W_K) are
# permuted from interleaved pairs to halves.
def test_rope_pairings_agree_only_after_the_conversion_permutation():
    rng = np.random.default_rng(9)
    d, T = 16, 11
    q, k = rng.normal(size=(2, T, d))
    pos = np.arange(T)
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)
    turn = np.exp(1j * pos[:, None] * theta[None, :])            # (T, d/2)

    def interleaved(x):                                           # complex pairs (x_2i, x_2i+1)
        z = (x[:, 0::2] + 1j * x[:, 1::2]) * turn
        return np.stack([z.real, z.imag], axis=-1).reshape(T, d)

    def halves(x):                                                # complex pairs (x_i, x_i+d/2)
        z = (x[:, : d // 2] + 1j * x[:, d // 2:]) * turn
        return np.concatenate([z.real, z.imag], axis=-1)

    to_halves = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    s_meta = interleaved(q) @ interleaved(k).T
    assert np.abs(halves(q) @ halves(k).T - s_meta).max() > 0.1
    np.testing.assert_allclose(halves(q[:, to_halves]) @ halves(k[:, to_halves]).T, s_meta,
                               rtol=0, atol=1e-12)

# Chapter 7, "exp2 with log2 e folded into the scale": r = x - floor(x) is exact in float32
# for x <= -1 and rounded by at most 2^-25 for -1 < x < 0.
def test_fractional_part_is_exact_below_minus_one_and_close_above():
    rng = np.random.default_rng(7)
    below = -rng.uniform(1, 126, 200_000).astype(np.float32)
    above = -rng.uniform(0, 1, 200_000).astype(np.float32)
    for x, bound in ((below, 0.0), (above, 2.0**-25)):
        r = x - np.floor(x)                                    # float32 arithmetic
        exact = x.astype(np.float64) - np.floor(x.astype(np.float64))
        assert r.dtype == np.float32
        assert np.abs(r.astype(np.float64) - exact).max() <= bound
    assert np.any((above - np.floor(above)).astype(np.float64) != above.astype(np.float64) + 1)


# Chapter 5, MLA: with the decoupled rotary part the absorbed form is multi-query attention,
# every head attending over one shared cached head [c_j ; k_rope_j], values c_j.
def test_absorbed_mla_with_decoupled_rope_is_mqa_over_the_latents():
    rng = np.random.default_rng(5)
    T, d_c, d_h, d_r, H = 7, 8, 4, 2, 3
    C = rng.normal(size=(T, d_c))                              # cached latents
    k_rope = rng.normal(size=(T, d_r))                         # cached rotated key part, shared
    W_UK, W_UV = rng.normal(size=(2, H, d_c, d_h))
    q_nope, q_rope = rng.normal(size=(H, 1, d_h)), rng.normal(size=(H, 1, d_r))
    scale = 1 / np.sqrt(d_h + d_r)
    # explicit: per-head keys [c W_UK ; k_rope], per-head values c W_UV
    keys = np.concatenate([C @ W_UK, np.broadcast_to(k_rope, (H, T, d_r))], axis=-1)
    a_explicit = softmax(np.concatenate([q_nope, q_rope], -1) @ np.swapaxes(keys, -1, -2) * scale)
    o_explicit = a_explicit @ (C @ W_UV)
    # absorbed: one shared key/value head for all query heads (MQA)
    shared_keys = np.concatenate([C, k_rope], axis=-1)         # (T, d_c + d_r)
    q_absorbed = np.concatenate([q_nope @ np.swapaxes(W_UK, -1, -2), q_rope], axis=-1)
    a_absorbed = softmax(q_absorbed @ shared_keys.T * scale)
    o_absorbed = (a_absorbed @ C) @ W_UV
    np.testing.assert_allclose(a_absorbed, a_explicit, rtol=0, atol=1e-12)
    np.testing.assert_allclose(o_absorbed, o_explicit, rtol=0, atol=1e-12)


# Chapter 9: the published 22.7M parameters include BERT's pooler, which attncore.bert skips.
def test_published_parameter_count_is_the_loaded_one_plus_the_pooler():
    bert = pytest.importorskip("attncore.bert")
    safetensors = pytest.importorskip("safetensors")
    try:
        model = bert.load()
    except (ImportError, FileNotFoundError, OSError) as error:  # the model package is optional
        pytest.skip(f"model files not installed: {error}")
    with safetensors.safe_open(str(model.path / "model.safetensors"), framework="numpy") as f:
        sizes = {k: int(np.prod(f.get_slice(k).get_shape())) for k in f.keys()}
    pooler = sum(v for k, v in sizes.items() if k.startswith("pooler."))
    hidden = model.config.hidden
    assert pooler == hidden * hidden + hidden
    weights = sum(v for k, v in sizes.items() if not k.endswith("position_ids"))
    assert weights == 22_713_216                               # the count Hugging Face publishes
    assert round(weights / 1e6, 1) == 22.7


# Bibliography: pybtex does not render TeX math, so a title must not carry $...$.
def test_bibliography_titles_have_no_raw_tex_math():
    titles = re.findall(r"title\s*=\s*\{(.*)\},?\s*$", (ROOT / "references.bib").read_text(), re.M)
    assert titles
    assert not [t for t in titles if "$" in t]


# Instructors and learners pages: no hand-typed exercise count to go stale, and learners set
# up with `make install-learner` (the site build is optional for them).
def test_pages_do_not_type_the_number_of_exercises():
    for name in ("instructors.md", "learners.md"):
        text = page(name).lower()
        assert not re.search(r"\b(five|six|seven|eight) exercises\b", text), name


def test_learners_install_without_building_the_site():
    setup = page("learners.md").split("### With `make`", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in setup.splitlines()]
    assert "make install-learner" in commands and "make book" not in commands


# Glossary: the chapter 7 entries describe the kernel as it is.
def test_glossary_has_no_stale_chapter_7_entries():
    text = page("appendix/glossary.md")
    assert "\nmatmul peak\n" not in text
    assert "4 x 4 block of the Numba kernel" not in text
    assert "runs it over (batch x heads) x query blocks" not in text
    for term in ("micro-kernel", "roofline", "ridge point", "theoretical peak", "measured peak",
                 "task queue", "exp2 folding"):
        assert f"\n{term}\n" in text, term
