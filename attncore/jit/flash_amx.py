"""The flash block with bfloat16 products on AMX tiles (tdpbf16ps): _flash_block_amx, the twin
of flash_bf16.py's _flash_block_bf16 for a TileShape with bf16 == "amx" (read that one first,
amx.py for the tiles, bf16.py for what is rounded).

The operands are the same packed words of two bf16, now in tiles of 16 rows x 16 words,
zero-padded to whole tiles (d to a multiple of 32, keys to 16 for S and 32 for V^T P,
d_v to 16). The panel of nr = 16 or 48 queries is 1 or 3 tiles wide:

  S^T (keys, nr) = K (keys, d) . qT       A: a tile's keys as rows (k_w), B: qT paired along d (q_w)
  o_t (d_v, nr) = V^T (d_v, keys) . P^T   A: the values transposed (v_w), B: P paired along keys (p_w)

S leaves the tiles for memory (s_t), where the softmax step of the float32 kernel (with the
bf16 rounding of the weights) runs on it as it is, after the scale; V^T P leaves them for o_t,
and acc = alpha acc + o_t stays in vector code. Every buffer a tile reads or writes starts on
a 64-byte boundary (amx.zeros). The thread loads its tile configuration at the start of the
block and releases the tiles at its end.
"""
import numpy as np

from .amx import _tile_configure, _tile_dot, _tile_load, _tile_release, _tile_store, _tile_zero, tile_config, zeros
from .bf16 import _pack_columns, _pack_rows
from .compiling import _jit
from .exponential import LN2
from .isa import _tile_cols
from .layout import _round_up
from .microkernels import _softmax_tile


@_jit
def _scores(k_w, rows, q_p, s_t, words, subs):
    """s_t[:rows, :16 subs] = k_w[:rows, :words] . q_p[:words, :16 subs] (rows and words multiples
    of 16). Per 16 queries and 64 keys: tiles 0..3 take the four 16-key blocks of S^T, 4 and 5
    two tiles of queries (32 along d), 6 and 7 the keys."""
    for s in range(0, 16 * subs, 16):
        for g in range(0, rows, 64):
            _tile_zero(0)
            _tile_zero(1)
            _tile_zero(2)
            _tile_zero(3)
            for c in range(0, words, 32):
                two = c + 16 < words
                _tile_load(4, q_p, c, s)
                if two:
                    _tile_load(5, q_p, c + 16, s)
                _tile_load(6, k_w, g, c)
                _tile_dot(0, 6, 4)
                if two:
                    _tile_load(7, k_w, g, c + 16)
                    _tile_dot(0, 7, 5)
                if g + 16 < rows:
                    _tile_load(6, k_w, g + 16, c)
                    _tile_dot(1, 6, 4)
                    if two:
                        _tile_load(7, k_w, g + 16, c + 16)
                        _tile_dot(1, 7, 5)
                if g + 32 < rows:
                    _tile_load(6, k_w, g + 32, c)
                    _tile_dot(2, 6, 4)
                    if two:
                        _tile_load(7, k_w, g + 32, c + 16)
                        _tile_dot(2, 7, 5)
                if g + 48 < rows:
                    _tile_load(6, k_w, g + 48, c)
                    _tile_dot(3, 6, 4)
                    if two:
                        _tile_load(7, k_w, g + 48, c + 16)
                        _tile_dot(3, 7, 5)
            _tile_store(0, s_t, g, s)
            if g + 16 < rows:
                _tile_store(1, s_t, g + 16, s)
            if g + 32 < rows:
                _tile_store(2, s_t, g + 32, s)
            if g + 48 < rows:
                _tile_store(3, s_t, g + 48, s)


@_jit
def _values(v_w, p_w, words, o_t, subs):
    """o_t[:, :16 subs] = v_w[:, :words] . p_w[:words, :16 subs] (o_t's rows and words multiples
    of 16). Per 16 queries and 64 rows of o_t: tiles 0..3 hold o_t, 4 and 5 the weights (32 keys
    each), 6 and 7 the values."""
    rows = o_t.shape[0]
    for s in range(0, 16 * subs, 16):
        for r in range(0, rows, 64):
            _tile_zero(0)
            _tile_zero(1)
            _tile_zero(2)
            _tile_zero(3)
            for c in range(0, words, 32):
                two = c + 16 < words
                _tile_load(4, p_w, c, s)
                if two:
                    _tile_load(5, p_w, c + 16, s)
                _tile_load(6, v_w, r, c)
                _tile_dot(0, 6, 4)
                if two:
                    _tile_load(7, v_w, r, c + 16)
                    _tile_dot(0, 7, 5)
                if r + 16 < rows:
                    _tile_load(6, v_w, r + 16, c)
                    _tile_dot(1, 6, 4)
                    if two:
                        _tile_load(7, v_w, r + 16, c + 16)
                        _tile_dot(1, 7, 5)
                if r + 32 < rows:
                    _tile_load(6, v_w, r + 32, c)
                    _tile_dot(2, 6, 4)
                    if two:
                        _tile_load(7, v_w, r + 32, c + 16)
                        _tile_dot(2, 7, 5)
                if r + 48 < rows:
                    _tile_load(6, v_w, r + 48, c)
                    _tile_dot(3, 6, 4)
                    if two:
                        _tile_load(7, v_w, r + 48, c + 16)
                        _tile_dot(3, 7, 5)
            _tile_store(0, o_t, r, s)
            if r + 16 < rows:
                _tile_store(1, o_t, r + 16, s)
            if r + 32 < rows:
                _tile_store(2, o_t, r + 32, s)
            if r + 48 < rows:
                _tile_store(3, o_t, r + 48, s)


@_jit
def _pack_weights(s_t, rows, p_w, words):
    """p_w[:words] = the rows :rows of s_t (float32 holding bf16) paired along keys, as _pack_pairs
    (rows even), and 0 in the words past rows / 2."""
    nr = s_t.shape[1]
    bits, out = s_t.reshape(s_t.size).view(np.uint32), p_w.reshape(p_w.size)  # flat: loops that vectorise
    half, low, high = np.uint32(16), np.uint32(0xFFFF), np.uint32(0xFFFF0000)
    for w in range(rows // 2):
        for i in range(nr):
            out[w * nr + i] = ((bits[2 * w * nr + i] >> half) & low) | (bits[(2 * w + 1) * nr + i] & high)
    out[rows // 2 * nr:words * nr] = 0


@_jit
def _flash_block_amx(queries, k, v, q0, q1, outputs, lses, settings, shape):
    """Queries q0:q1 of queries (T_q, d) -> the same rows of outputs (T_q, d_v) and lses (T_q,),
    as _flash_block_bf16, on AMX tiles (only where amx.available())."""
    t_k, scale, block_k = settings.t_k, settings.scale, settings.block_k
    causal, offset = settings.causal, settings.offset
    q, out, lse = queries[q0:q1], outputs[q0:q1], lses[q0:q1]
    rows, d = q.shape[0], q.shape[1]
    nr = _tile_cols(shape, q)
    subs = nr // 16
    d_v, d_vp = out.shape[1], v.shape[1]
    dw = (d + 1) // 2
    words = _round_up(dw, 16)  # words of bf16 pairs along d, whole tiles
    d_vt = _round_up(d_vp, 16)
    panels = (rows + nr - 1) // nr
    tile = _round_up(min(block_k, t_k), 32)
    q_w = zeros(panels * words, nr, np.uint32)  # tiles: 64-byte aligned (amx.zeros)
    acc_t = np.zeros((panels, d_vt, nr), np.float32)
    m = np.full((panels, nr), -np.inf, np.float32)
    l = np.zeros((panels, nr), np.float32)
    s_t = zeros(tile, nr, np.float32)
    s_flat = s_t.reshape(s_t.size)
    o_t = zeros(d_vt, nr, np.float32)  # a tile's V^T P
    o_flat = o_t.reshape(o_t.size)
    k_w = zeros(tile, words, np.uint32)
    v_w = zeros(d_vt, tile // 2, np.uint32)
    p_w = zeros(tile // 2, nr, np.uint32)
    shift = np.empty(nr, np.float32)
    alpha = np.empty(nr, np.float32)
    minus_inf = np.float32(-np.inf)
    q_panel = np.zeros((nr, d), np.float32)
    q_pairs = np.empty((nr, dw), np.uint32)
    for p in range(panels):
        width = min(nr, rows - p * nr)
        q_panel[:width] = q[p * nr:p * nr + width]
        q_panel[width:] = 0
        _pack_rows(q_panel, 0, nr, q_pairs)
        q_w[p * words:p * words + dw] = q_pairs.T
    _tile_configure(tile_config())
    k_end = t_k if not causal else max(0, min(t_k, q0 + rows + offset))
    for k0 in range(0, k_end, block_k):
        n_tile = min(block_k, t_k - k0)
        _pack_rows(k, k0, n_tile, k_w)
        k_w[n_tile:_round_up(n_tile, 16)] = 0
        _pack_columns(v, k0, n_tile, v_w)
        for p in range(panels):
            j0 = p * nr
            n = n_tile
            if causal:
                n = min(n, q0 + min(j0 + nr, rows) + offset - k0)
            if n <= 0:
                continue
            n_pad = _round_up(n, 16)
            _scores(k_w, n_pad, q_w[p * words:(p + 1) * words], s_t, words, subs)
            masked = n < n_pad or (causal and k0 + n - 1 > q0 + j0 + offset)
            for i in range(n_pad * nr):  # the scale after the sum, so the products stay exact
                s_flat[i] *= scale
            if masked:
                for j in range(n_pad):
                    if j >= n:
                        cut = nr
                    elif causal:
                        cut = max(0, min(nr, k0 + j - offset - q0 - j0))
                    else:
                        cut = 0
                    for i in range(cut):
                        s_t[j, i] = minus_inf
            shift[:] = m[p]
            _softmax_tile(s_t, n_pad, n_pad, m[p], l[p], shift, alpha, shape)
            n_words = _round_up(n_pad // 2, 16)  # the weights past n are 0
            _pack_weights(s_t, n_pad, p_w, n_words)
            _values(v_w, p_w, n_words, o_t, subs)
            acc_p = acc_t[p]
            acc_flat = acc_p.reshape(acc_p.size)
            for c in range(0, d_vt * nr, nr):
                for i in range(nr):
                    acc_flat[c + i] = acc_flat[c + i] * alpha[i] + o_flat[c + i]
    _tile_release()
    for i in range(rows):
        p, c0 = i // nr, i % nr
        seen = l[p, c0] > 0
        lse[i] = m[p, c0] * LN2 + np.log(l[p, c0]) if seen else -np.inf
        inverse = 1 / l[p, c0] if seen else 0
        for c in range(d_v):
            out[i, c] = acc_t[p, c, c0] * inverse
