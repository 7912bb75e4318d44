"""05-flash: online_softmax_stats, flash_attention and row_from_lse.

References: attncore.flash (its tile_state and merge for the running statistics),
attncore.flash_attention, and attncore.weights_from_lse.
"""
import numpy as np

import attncore
from attncore.flash import empty_state, merge, tile_state

from .. import stand_ins
from ..probe import MATERIALISED, MATERIALISED_FIX, Case, FunctionSpec, Misconception
from .common import (
    EXP2,
    EXP2_DETAIL,
    EXP2_FIX,
    UNSTABLE,
    arrays,
    keys_not_transposed,
    output_like_queries,
    scale_misconception,
)

ASSIGNMENT = "05-flash"
FORBIDDEN = ("flash_attention", "attention", "attention_weights", "attention_scores", "softmax",
             "logsumexp", "log_softmax", "weights_from_lse", "flash.tile_state", "flash.merge",
             "flash.finalize")

NO_RESCALE = "online softmax without rescaling"
PER_TILE = "normalised per tile instead of once at the end"
NO_RESCALE_FIX = ("when a tile raises the running maximum from m_old to m_new, everything "
                  "accumulated so far was computed relative to m_old: multiply the running sum "
                  "l (and the accumulator acc) by alpha = exp(m_old - m_new) before adding the "
                  "new tile, whose terms are exp(s - m_new).")
DROPPED = "last partial tile dropped"
DROPPED_FIX = ("loop with range(0, T, block_size) and slice x[start:start + block_size]: the "
               "last tile may be shorter than block_size (NumPy slicing stops at the end), but "
               "its entries count like all the others.")
ZERO_MAX = "running max started at 0 instead of -inf"
ZERO_MAX_FIX = ("start the running maximum at -inf (np.full(rows, -np.inf)), so that after the "
                "first tile it is the true maximum of the scores seen, even when they are all "
                "negative; starting at 0 keeps exp(s - 0), which underflows to 0 for very "
                "negative scores.")
NO_MAX = "no maximum subtracted in the tiles"
NO_MAX_FIX = ("never exponentiate a raw score: keep a running maximum m per row, use "
              "exp(s - m_new) for the new tile, and rescale what was accumulated by "
              "exp(m_old - m_new) when m grows. exp(s) alone overflows for scores above 709 "
              "(88 in float32) and underflows to 0 for scores below -745.")
ALPHA_INVERTED = "rescale factor upside down"
ALPHA_INVERTED_FIX = ("the factor that brings the old sums to the new maximum is "
                      "alpha = exp(m_old - m_new) <= 1, not exp(m_new - m_old): the old terms "
                      "exp(s - m_old) become exp(s - m_new) = exp(s - m_old) * exp(m_old - m_new).")
ALPHA_INVERTED_DETAIL = [
    "Your sums match alpha = exp(m_new - m_old): on the first tile m_old = -inf makes it "
    "inf, and inf * 0 is NaN.",
    "Your sums match alpha = exp(m_new - m_old), the inverse of the factor that rescales the "
    "old terms: each time the maximum grows, the old part is multiplied up instead of down.",
]


def _tiles(n, block, drop_last=False):
    """Start indices of the tiles of n items; drop_last keeps only the full tiles."""
    return range(0, n - block + 1, block) if drop_last else range(0, n, block)


def _partial_note(args, length_name, n):
    block = args["block_size"]
    if n % block == 0:
        return ""
    if n < block:
        return (f"With {length_name} = {n} and block_size = {block} there is a single tile, of "
                f"{n}; your result ignores it.")
    return (f"With {length_name} = {n} and block_size = {block} the tiles are "
            f"{n // block} of {block} and a last one of {n % block}; your result ignores the last.")


# ---------------------------------------------------------------- online_softmax_stats

def stats_reference(x, block_size):
    """(m, l) folded tile by tile with attncore.flash's own tile_state and merge."""
    state = empty_state(x.shape[0], 0, x.dtype)
    for k0 in range(0, x.shape[1], block_size):
        tile = x[:, k0:k0 + block_size]
        state = merge(state, tile_state(tile, np.zeros((tile.shape[1], 0), x.dtype)))
    return state.m, state.l


def _alpha(m, m_new, exp=np.exp, inverted=None):
    """The rescale factor exp(m - m_new); inverted: "raw" exp(m_new - m), NaN on the first
    tile, or "guarded" the same with 1 on the first tile."""
    if inverted is None:
        return exp(m - m_new)
    alpha = exp(m_new - m)
    return np.where(np.isneginf(m), 1.0, alpha) if inverted == "guarded" else alpha


def _stats_with(rescale=True, tile_max=False, m0=-np.inf, drop_last=False, naive=False,
                exp=np.exp, inverted=None, last_max=False):
    """A learner's one-pass (m, l) with one of the catalogued mistakes; last_max: m is the
    maximum of the last tile only (overwritten, not a running maximum)."""
    def run(x, block_size):
        rows = x.shape[0]
        m, l = np.full(rows, m0), np.zeros(rows)
        for k0 in _tiles(x.shape[1], block_size, drop_last):
            t = x[:, k0:k0 + block_size].astype(np.float64)
            m_new = np.maximum(m, t.max(axis=1))
            if naive:
                l = l + np.exp(t).sum(axis=1)
            elif tile_max:
                l = l + np.exp(t - t.max(axis=1, keepdims=True)).sum(axis=1)
            else:
                alpha = _alpha(m, m_new, exp, inverted) if rescale else 1.0
                l = alpha * l + exp(t - m_new[:, None]).sum(axis=1)
            m = t.max(axis=1) if last_max else m_new
        if naive:
            l = l / np.exp(m)
        return m.astype(x.dtype), l.astype(x.dtype)
    return run


def _stats_against_old_max(x, block_size):
    """A learner's (m, l) that adds a tile's exp(s - m_old) before updating m to m_new."""
    m = x[:, 0].astype(np.float64)
    l = np.zeros(x.shape[0])
    with np.errstate(all="ignore"):
        for k0 in range(0, x.shape[1], block_size):
            t = x[:, k0:k0 + block_size].astype(np.float64)
            m_new = np.maximum(m, t.max(axis=1))
            l = (l + np.exp(t - m[:, None]).sum(axis=1)) * np.exp(m - m_new)
            m = m_new
    return m.astype(x.dtype), l.astype(x.dtype)


def tile_mistakes(with_mistake):
    """ALPHA_INVERTED and EXP2, the two mistakes of a tile loop that the online statistics and
    the whole tiled attention share: with_mistake(**change) builds the wrong loop."""
    return [
        Misconception(ALPHA_INVERTED, ALPHA_INVERTED_FIX,
                      variants=(with_mistake(inverted="raw"), with_mistake(inverted="guarded")),
                      detail=ALPHA_INVERTED_DETAIL),
        Misconception(EXP2, EXP2_FIX, variants=(with_mistake(exp=np.exp2),), detail=EXP2_DETAIL),
    ]


def stats_case(seed, t_q, t_k, block, what, last_tile_bonus=0.0, offset=0.0, dtype=np.float64,
               row_offsets=None):
    def make():
        (x,) = arrays(seed, (t_q, t_k))
        x = x + offset
        if last_tile_bonus:
            last = (t_k - 1) // block * block
            x[:, last:] += last_tile_bonus
        if row_offsets is not None:
            x = x + np.resize(np.asarray(row_offsets, float), t_q)[:, None]
        return {"x": x.astype(dtype), "block_size": block}
    return Case(f"x of shape ({t_q}, {t_k}), block_size = {block}: {what}", make)


STATS_CASES = {
    "basic": [
        stats_case(1, 2, 6, 2, "three tiles of 2, the largest score of every row in the last tile",
                   last_tile_bonus=4.0),
        stats_case(2, 3, 7, 3, "tiles of 3, 3 and 1 (7 is not a multiple of 3)"),
    ],
    "hidden": [
        stats_case(3, 3, 5, 8, "block_size larger than the row: one tile of 5"),
        stats_case(4, 4, 10, 4, "tiles of 4, 4 and 2, every score negative (around -20)",
                   offset=-20.0),
        stats_case(5, 2, 5, 1, "every key its own tile, the largest score last",
                   last_tile_bonus=3.0),
        stats_case(6, 5, 9, 4, "float32, tiles of 4, 4 and 1, the largest score in the last tile",
                   last_tile_bonus=30.0, dtype=np.float32),
    ],
    "extreme": [
        stats_case(7, 4, 11, 4, "rows at offsets -1e4, 0, 1e4, -50",
                   row_offsets=[-1e4, 0, 1e4, -50]),
        stats_case(8, 3, 13, 5, "rows at offsets 1e4, -1e4, 0 with the largest score in the last "
                   "tile, 200 above the rest", last_tile_bonus=200.0, row_offsets=[1e4, -1e4, 0]),
        stats_case(9, 2, 6, 2, "the last tile 1000 above the first: exp(s - the OLD maximum) "
                   "overflows", last_tile_bonus=1000.0),
    ],
}


STATS_MISCONCEPTIONS = [
    Misconception(
        "tile summed against the old maximum",
        "update the maximum FIRST: m_new = max(m, tile maximum), then l = l * exp(m - m_new) + "
        "sum(exp(tile - m_new)). Summing exp(tile - m) against the old m overflows as soon as a "
        "tile scores more than about 709 (88 in float32) above every earlier score.",
        variants=(_stats_against_old_max,),
        detail="Your l is inf or NaN where a later tile scores far above the earlier ones: "
               "exp(s - m) with the old, smaller m overflowed before the rescale."),
    Misconception(NO_RESCALE, NO_RESCALE_FIX,
                  variants=(_stats_with(rescale=False), _stats_with(tile_max=True),
                            _stats_with(tile_max=True, last_max=True),
                            _stats_with(rescale=False, last_max=True)),
                  detail=["Your l adds the new tile's exp(s - m_new) to an old l that is still "
                          "relative to the old maximum; the largest score comes in a later tile "
                          "here, so the old part is too big.",
                          "Your l adds up each tile's exp(s - tile maximum) without bringing "
                          "them to one common maximum: tiles with a small maximum are counted "
                          "too heavily.",
                          "Your l adds up each tile's exp(s - tile maximum) without bringing "
                          "them to one common maximum, and your m is the maximum of the LAST "
                          "tile only (overwritten each tile) instead of the running maximum "
                          "m = max(m_old, tile maximum).",
                          "Your m is the maximum of the LAST tile only (overwritten each tile), "
                          "and your l adds each new tile to an old l that was never rescaled "
                          "by exp(m_old - m_new)."]),
    *tile_mistakes(_stats_with),
    Misconception(DROPPED, DROPPED_FIX, variants=(_stats_with(drop_last=True),),
                  detail=lambda args, i: _partial_note(args, "T_k", args["x"].shape[1])),
    Misconception(ZERO_MAX, ZERO_MAX_FIX, variants=(_stats_with(m0=0.0),),
                  detail="Every score of some row is negative, so its maximum is negative, but "
                         "your m is 0."),
    Misconception(NO_MAX, NO_MAX_FIX, variants=(_stats_with(naive=True),),
                  detail="exp of a score of 1e4 overflows, and exp(-1e4) underflows."),
]


# ---------------------------------------------------------------- flash_attention

def flash_reference(Q, K, V, block_size):
    return attncore.flash_attention(Q, K, V, block_q=block_size, block_k=block_size)


def _flash_with(rescale_l=True, rescale_acc=True, tile_max=False, m0=-np.inf, drop_k=False,
                drop_q=False, normalise="end", scale=None, exp=np.exp, inverted=None,
                naive=False):
    """A learner's tiled attention with one of the catalogued mistakes.

    normalise: "end" (acc / l after the last tile), "loop" (acc / l after every tile),
    "tile sum" or "tile mean" (each tile's own softmax times its values, summed or averaged
    over the tiles). naive: exp(s) with no maximum at all.
    """
    def run(Q, K, V, block_size):
        t_q, d = Q.shape
        c = 1 / np.sqrt(d) if scale is None else scale
        out = np.zeros((t_q, V.shape[1]))
        for q0 in _tiles(t_q, block_size, drop_q):
            q = Q[q0:q0 + block_size].astype(np.float64)
            rows = q.shape[0]
            m, l, acc = np.full(rows, m0), np.zeros(rows), np.zeros((rows, V.shape[1]))
            tiles = _tiles(K.shape[0], block_size, drop_k)
            for k0 in tiles:
                s = q @ K[k0:k0 + block_size].T * c
                v = V[k0:k0 + block_size]
                m_new = np.maximum(m, s.max(axis=1))
                alpha = np.ones(rows) if naive else _alpha(m, m_new, exp, inverted)
                shift = (s.max(axis=1) if tile_max or normalise.startswith("tile")
                         else np.zeros(rows) if naive else m_new)
                p = exp(s - shift[:, None])
                if normalise.startswith("tile"):
                    acc = acc + (p / p.sum(axis=1, keepdims=True)) @ v
                    continue
                l = (alpha if rescale_l and not tile_max else 1.0) * l + p.sum(axis=1)
                acc = (alpha[:, None] if rescale_acc and not tile_max else 1.0) * acc + p @ v
                if normalise == "loop":
                    acc = acc / l[:, None]
                m = m_new
            out[q0:q0 + rows] = (acc / l[:, None] if normalise == "end" else
                                 acc / len(tiles) if normalise == "tile mean" else acc)
        return out.astype(Q.dtype)
    return run


def flash_args(seed, t_q, t_k, d, d_v, block, key_bonus=None, row_offset=None,
               dtype=np.float64, scale=1.0):
    """Q, K, V whose scaled scores are random + row_offset[i] + key_bonus[j] (via the last
    two feature dimensions), and block_size."""
    Q, K, V = arrays(seed, (t_q, d), (t_k, d), (t_k, d_v), scale=scale)
    if key_bonus is not None or row_offset is not None:
        bonus = np.zeros(t_k) if key_bonus is None else np.asarray(key_bonus, float)
        offset = (np.zeros(t_q) if row_offset is None
                  else np.resize(np.asarray(row_offset, float), t_q))
        Q[:, -2], K[:, -2] = np.sqrt(d), bonus
        Q[:, -1], K[:, -1] = offset * np.sqrt(d), 1.0
    return {"Q": Q.astype(dtype), "K": K.astype(dtype), "V": V.astype(dtype), "block_size": block}


def in_tile(t_k, block, which, amount):
    """Bonus `amount` for the keys of the first or the last tile."""
    bonus = np.zeros(t_k)
    if which == "first":
        bonus[:block] = amount
    else:
        bonus[(t_k - 1) // block * block:] = amount
    return bonus


def blocks_reversed(args):
    """The same keys and values with their tiles in reverse order."""
    block, t_k = args["block_size"], args["K"].shape[0]
    order = np.concatenate([np.arange(k0, min(k0 + block, t_k))
                            for k0 in reversed(range(0, t_k, block))])
    return {**args, "K": args["K"][order], "V": args["V"][order]}


def flash_case(description, seed, t_q, t_k, d, d_v, block, transform=None,
               max_extra_bytes=None, **kw):
    def make():
        args = flash_args(seed, t_q, t_k, d, d_v, block, **kw)
        return transform(args) if transform else args
    return Case(f"T_q = {t_q}, T_k = {t_k}, d = {d}, d_v = {d_v}, block_size = {block}: "
                f"{description}", make, max_extra_bytes)


def allowed_bytes(args):
    """Three quarters of the full score matrix in float64, never below 256 KiB: in the
    memory case a (block_size, T_k) slab with its exponentials is 1.3 times the matrix (the
    slab alone, 0.67), one tile of keys a small fraction, and a copy of the inputs as Python
    lists (5 MB of a process's resident memory) well below."""
    return max(args["Q"].shape[0] * args["K"].shape[0] * 8 * 3 // 4, 256 * 1024)


SLAB = "a (block_size, T_k) slab of scores materialised"
SLAB_FIX = ("tile the keys too: for each tile of queries, loop over key tiles "
            "K[k0:k0 + block_size], keep m, l and acc per query row, and hold only one "
            "(block_size, block_size) tile of scores at a time.")


def what_was_held(args, peak, allowed):
    """Name what a peak above the budget held, from the sizes of the score arrays. Below the
    full (T_q, T_k) matrix in float64 it was a slab: all T_k scores of a tile of queries. At
    or above it, the full matrix, or a slab with its exponentials (or two slabs), which is
    as large in the memory case: the peak alone cannot tell those apart, and the feedback
    says so."""
    t_q, t_k, block = args["Q"].shape[0], args["K"].shape[0], args["block_size"]
    full, slab, tile = t_q * t_k * 8, min(block, t_q) * t_k * 8, block * block * 8
    said = (f"Your function allocated {peak / 1e6:.2f} MB at its peak; a tiled version needs at "
            f"most {allowed / 1e6:.2f} MB here. For this input the full (T_q, T_k) = "
            f"({t_q}, {t_k}) score matrix takes {full / 1e6:.2f} MB, a ({min(block, t_q)}, "
            f"{t_k}) slab of it (one tile of queries against every key) {slab / 1e6:.2f} MB, "
            f"and one ({block}, {block}) tile {tile / 1e3:.0f} kB.")
    if peak < full:
        return (SLAB, f"{said} Your peak is below the full matrix: what you held is a slab of "
                      f"scores, all T_k keys for a tile of queries at once.", SLAB_FIX)
    return (f"{MATERIALISED}, or {SLAB} with its exponentials",
            f"{said} Your peak is at least the full matrix: you held it, or a slab together "
            f"with its exponentials or with the next slab (as large here); the peak cannot tell "
            f"which.", MATERIALISED_FIX)


FLASH_CASES = {
    "basic": [
        flash_case("three key tiles of 2, the largest score of every row in the last tile",
                   1, 4, 6, 4, 2, 2, key_bonus=in_tile(6, 2, "last", 5.0)),
        flash_case("query tiles of 3 and 2, key tiles of 3, 3 and 1", 2, 5, 7, 4, 3, 3),
    ],
    "hidden": [
        flash_case("the largest score of every row in the first key tile", 3, 4, 8, 8, 3, 3,
                   key_bonus=in_tile(8, 3, "first", 5.0)),
        flash_case("the keys and values of the previous input with their tiles in reverse order "
                   "(the output must not change: attention does not depend on the order of "
                   "the keys)", 3, 4, 8, 8, 3, 3, key_bonus=in_tile(8, 3, "first", 5.0),
                   transform=blocks_reversed),
        flash_case("block_size larger than both lengths: one partial tile", 4, 3, 5, 4, 2, 8),
        flash_case("a single query (a decoding step), key tiles of 1", 5, 1, 6, 4, 3, 1),
        flash_case("float32, tiles of 4, 4 and 2, the largest score in the last key tile",
                   6, 10, 10, 16, 4, 4, key_bonus=in_tile(10, 4, "last", 30.0), dtype=np.float32),
    ],
    "extreme": [
        flash_case("score rows at offsets -1e4, 0, 1e4, -50", 8, 4, 9, 8, 3, 4,
                   row_offset=[-1e4, 0, 1e4, -50]),
        flash_case("every score close to -1e4", 7, 3, 7, 8, 2, 3, row_offset=[-1e4]),
        flash_case("float32, scores in the hundreds, the largest 300 above the rest in the last "
                   "key tile", 9, 6, 11, 16, 4, 4, key_bonus=in_tile(11, 4, "last", 300.0),
                   row_offset=[100, -200, 0], dtype=np.float32),
    ],
    # d = 2 and 96 x 16384 scores: the full score matrix (12.6 MB) and a (block_size, T_k)
    # slab with its exponentials (16.8 MB) stand out against one 64 x 64 tile (33 kB) far
    # beyond the noise of a process's resident memory (which the sandboxed grader measures
    # from outside: about 3 MB for the call itself), while a pure-Python loop over rows and
    # keys still finishes in a few seconds.
    "memory": [
        flash_case("large enough that the full (T_q, T_k) score matrix takes 12.6 MB", 10,
                   96, 16384, 2, 2, 64, max_extra_bytes=allowed_bytes),
    ],
}


def exp_out_of_range_detect(args, got, expected):
    """NO_MAX by its damage: every wrong row came out NaN, inf or zero, and is a row whose
    largest scaled score is beyond what exp can take in the input's dtype (above
    log(max), about 709 in float64, or below log(tiny), about -708): exp(s) without the
    maximum subtracted is inf or 0 there, so acc / l is inf / inf or 0 / 0."""
    got = np.asarray(got, dtype=float)
    if got.shape != expected.shape:
        return None
    Q, K = args["Q"], args["K"]
    top = (Q.astype(float) @ K.T.astype(float) / np.sqrt(Q.shape[-1])).max(axis=1)
    info = np.finfo(Q.dtype)
    beyond = (top > np.log(info.max)) | (top < np.log(info.tiny))
    dead = ~np.isfinite(got).all(axis=1) | np.all(got == 0, axis=1)
    wrong = ~np.isclose(got, expected, rtol=1e-3, atol=1e-6, equal_nan=True).all(axis=1)
    if not wrong.any() or not np.all(dead[wrong] & beyond[wrong]):
        return None
    row = int(np.argmax(wrong))
    return (f"Row {row} has scaled scores up to {top[row]:.6g}: exp of them is "
            f"{'inf' if top[row] > 0 else '0'} in {Q.dtype}, and your row came out "
            f"{np.array2string(got[row], precision=3)}. Subtracting the running maximum keeps "
            f"every exponent <= 0 and the largest term exp(0) = 1.")


def _dropped_detail(args, i):
    """The tiles of a result without the last partial key tile (i = 0) or query tile (1)."""
    if i == 0:
        return _partial_note(args, "T_k", args["K"].shape[0])
    return _partial_note(args, "T_q", args["Q"].shape[0]).replace(
        "ignores the last", "leaves the rows of the last query tile empty").replace(
        "ignores it", "leaves its rows empty")


FLASH_MISCONCEPTIONS = [
    output_like_queries(),
    Misconception(NO_RESCALE, NO_RESCALE_FIX,
                  variants=(_flash_with(rescale_l=False, rescale_acc=False),
                            _flash_with(rescale_l=False), _flash_with(rescale_acc=False),
                            _flash_with(tile_max=True)),
                  detail=["Neither l nor acc is multiplied by exp(m_old - m_new) when a later "
                          "tile has a larger score: the earlier tiles end up weighted too "
                          "heavily.",
                          "acc is rescaled by exp(m_old - m_new) but the running sum l is not.",
                          "l is rescaled by exp(m_old - m_new) but the accumulator acc is not.",
                          "Each tile is exponentiated against its own maximum and the tiles are "
                          "added without bringing them to one common maximum."]),
    *tile_mistakes(_flash_with),
    Misconception(DROPPED, DROPPED_FIX,
                  variants=(_flash_with(drop_k=True), _flash_with(drop_q=True)),
                  detail=_dropped_detail),
    Misconception(ZERO_MAX, ZERO_MAX_FIX, variants=(_flash_with(m0=0.0),),
                  detail="In a row whose scores are all far below 0 (here near -1e4), a running "
                         "maximum that starts at 0 stays 0: every exp(s - 0) underflows to 0 "
                         "and acc / l is 0 / 0."),
    Misconception(
        PER_TILE,
        "keep acc unnormalised (a sum of exp(s - m) v over ALL tiles so far) and divide by l "
        "once, after the last tile. A tile's own softmax sums to 1 over that tile only, so "
        "adding (or averaging) the tiles' softmaxes, or dividing by l inside the loop and "
        "then adding the next tile's unnormalised terms, mixes weights of different scales.",
        variants=(_flash_with(normalise="loop"), _flash_with(normalise="tile sum"),
                  _flash_with(normalise="tile mean")),
        detail=["Your acc is divided by l after every tile, then the next tile's unnormalised "
                "terms are added to it.",
                "Your output is the sum over key tiles of each tile's own softmax times its "
                "values: its weights add up to the number of tiles.",
                "Your output is the average over key tiles of each tile's own softmax times its "
                "values: every tile gets the same total weight, whatever its scores."]),
    Misconception(NO_MAX, NO_MAX_FIX, variants=(_flash_with(naive=True),),
                  detail="Your result matches exp(s) without any maximum subtracted: exp of "
                         "scores near 1e4 overflows to inf, and near -1e4 underflows to 0, so "
                         "acc / l is inf / inf or 0 / 0.",
                  detect=exp_out_of_range_detect),
    scale_misconception(lambda c: _flash_with(scale=c)),
    keys_not_transposed(),
]


# ---------------------------------------------------------------- row_from_lse

def row_reference(q, K, lse):
    return attncore.weights_from_lse(q[None, :], K, np.asarray([lse], dtype=q.dtype))[0]


def lse_case(description, seed, d, t_k, keep=None, row_offset=0.0, dtype=np.float64, scale=1.0):
    """q, the keys `keep` of t_k keys (default all), and the lse of q over ALL t_k keys."""
    def make():
        q, K = arrays(seed, (d,), (t_k, d), scale=scale)
        if row_offset:
            q[-1], K[:, -1] = row_offset * np.sqrt(d), 1.0
        q, K = q.astype(dtype), K.astype(dtype)
        lse = attncore.logsumexp(K @ q / np.sqrt(d))  # over every key
        chosen = K if keep is None else K[list(keep)]
        return {"q": q, "K": chosen, "lse": float(lse)}
    return Case(description, make)


LSE_CASES = {
    "basic": [
        lse_case("d_k = 4, the 5 keys of the row", 1, 4, 5),
        lse_case("d_k = 4, keys 1, 3 and 4 of the 6 keys the query attended to (their weights "
                 "sum to less than 1)", 2, 4, 6, keep=[1, 3, 4]),
    ],
    "hidden": [
        lse_case("d_k = 16, the 7 keys of the row, float32", 3, 16, 7, dtype=np.float32),
        lse_case("d_k = 8, the last 2 of 9 keys", 4, 8, 9, keep=[7, 8]),
    ],
    "extreme": [
        lse_case("d_k = 8, 6 keys, every score near 1e4", 5, 8, 6, row_offset=1e4),
        lse_case("d_k = 8, keys 0 and 2 of 5, every score near -1e4", 6, 8, 5, keep=[0, 2],
                 row_offset=-1e4),
    ],
}


def _row_with(factor=None, divide=False, normalise=False, naive=False, exp=np.exp):
    """A learner's row recovery with one of the catalogued mistakes."""
    def run(q, K, lse):
        c = 1 / np.sqrt(q.shape[0]) if factor is None else factor
        s = (K @ q) * c
        if divide:
            return np.exp(s) / lse
        if normalise:
            e = np.exp(s - s.max())
            return e / e.sum()
        if naive:
            return np.exp(s) / np.exp(lse)
        return exp(s - lse)
    return run


LSE_MISCONCEPTIONS = [
    Misconception(
        "log-sum-exp row recovery without the scale",
        "the lse was computed from the SCALED scores q . k_j / sqrt(d_k), so recover with the "
        "same scores: exp(q . k_j / sqrt(d_k) - lse).",
        variants=(_row_with(factor=1.0),), finite=True, detail=lambda a, i: (
            f"Your result is exp(q . k_j - lse), with the raw dot products; with d_k = "
            f"{a['q'].shape[0]} the scores are q . k_j / {np.sqrt(a['q'].shape[0]):.4g}.")),
    scale_misconception(lambda c: _row_with(factor=c)),
    Misconception(
        "divided by the log-sum-exp instead of subtracting it",
        "lse is the LOG of the normaliser: a_j = exp(s_j) / exp(lse) = exp(s_j - lse). Subtract "
        "it inside the exp; do not divide by it.",
        variants=(_row_with(divide=True),), finite=True),
    Misconception(
        "row renormalised instead of using the log-sum-exp",
        "K may hold only some of the keys the query attended to, so their weights need not sum "
        "to 1: use the lse you are given, exp(s_j - lse), instead of normalising over K.",
        variants=(_row_with(normalise=True),), detail=lambda a, i: (
            f"Your entries sum to 1, but these {a['K'].shape[0]} keys are only part of the row: "
            f"their weights sum to {float(row_reference(**a).sum()):.4g}.")),
    Misconception(EXP2, EXP2_FIX.replace("softmax of s * ln(2)", "row of 2 ** (s - lse)"),
                  variants=(_row_with(exp=np.exp2),), detail=EXP2_DETAIL.replace("m)", "lse)")),
    Misconception(
        "the log-sum-exp inside the scale",
        "subtract lse from the SCALED scores: exp(q . k_j / sqrt(d_k) - lse). Dividing "
        "(q . k_j - lse) by sqrt(d_k) scales the lse too.",
        variants=(lambda q, K, lse: np.exp((K @ q - lse) / np.sqrt(q.shape[0])),),
        detail="Your row is exp((q . k_j - lse) / sqrt(d_k)): the parentheses put lse inside "
               "the scaling."),
    Misconception(
        "log-weights returned (exp forgotten)",
        "s_j - lse is the LOG of the weight: return exp(s_j - lse).",
        variants=(lambda q, K, lse: K @ q / np.sqrt(q.shape[0]) - lse,),
        detail="Your entries are s_j - lse, negative numbers: the logs of the weights."),
    Misconception(UNSTABLE, "compute exp(s - lse) in one step: exp(s) and exp(lse) overflow "
                  "for scores near 1e4 even though their ratio is small.",
                  variants=(_row_with(naive=True),)),
]


SPECS = [
    FunctionSpec(
        name="online_softmax_stats",
        plain=(stand_ins.online_softmax_stats,),
        axes={"x": ("T_q", "T_k"), "return": (("T_q",), ("T_q",))},
        stand_in=stand_ins.online_softmax_stats,
        reference=stats_reference,
        suites=STATS_CASES,
        misconceptions=STATS_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
    FunctionSpec(
        name="flash_attention",
        plain=(stand_ins.flash_attention,),
        axes={"Q": ("T_q", "d_k"), "K": ("T_k", "d_k"), "V": ("T_k", "d_v"), "return": ("T_q", "d_v")},
        reference=flash_reference,
        suites=FLASH_CASES,
        misconceptions=FLASH_MISCONCEPTIONS + [Misconception(SLAB, SLAB_FIX)],  # named by memory=
        forbidden=FORBIDDEN,
        memory=what_was_held,
    ),
    FunctionSpec(
        name="row_from_lse",
        plain=(stand_ins.row_from_lse,),
        axes={"q": ("d_k",), "K": ("T_k", "d_k"), "return": ("T_k",)},
        reference=row_reference,
        suites=LSE_CASES,
        misconceptions=LSE_MISCONCEPTIONS,
        forbidden=FORBIDDEN,
    ),
]
