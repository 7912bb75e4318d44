"""Claims the book's prose makes that are facts of arithmetic or of the repository, checked.

Each test names the page and the sentence it holds to account, so that a change that breaks
the claim fails here rather than on a reader's screen.
"""
import math
import re
from pathlib import Path

import numpy as np
import pytest

from attncore import softmax
from attncore.bfloat16 import EPS as EPS_BF16, round_to_bfloat16
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
