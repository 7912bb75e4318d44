"""Decoding with grouped-query heads: decode_attention, and its kernel _decode (Flash-Decoding).

One new token (or a speculative chunk of T_q) against a long KV cache reads every byte of
K and V once and does little arithmetic with each: the memory bus sets the time. So:

* One kv head, read once, for its G query heads. Query head h reads kv head h // G
  (attncore.kv_head_map); the G heads x T_q queries of a kv head are packed into the
  lanes of the micro-kernel's panel, query-major: packed row rho = t * G + g is query t
  of head h * G + g. K and V stream once, through one of three pairs of micro-kernels:

  - rows that fit one vector's lanes (G x T_q up to 16 in float32 on AVX-512: one token,
    a speculative chunk): scores and weights times V by rows, vectors along d
    (decode_microkernels.py; _decode_rows), where a panel of query lanes would stay partly
    empty;
  - more rows: the flash driver's scores and softmax, panels of nr rows in the lanes
    (microkernels.py; no transposing sums), and the weights times V by rows (_decode_split);
  - d or d_v that the by-rows kernels do not take (decode_microkernels.fits): the flash
    driver's micro-kernels for both, V read transposed.
* Causal, bottom-right (decoding): query t sees key j when j <= t + offset; packed
  query-major, the lanes that hide key j are the first G * (j - offset) of the rows,
  one contiguous cut, as in the flash driver.
* Long T_k is split across threads (Flash-Decoding, Dao et al. 2023): a task is (kv head
  group, key split); it keeps the online softmax's running max m, sum l and
  accumulator acc of its keys (log2 units, as the flash driver). Tasks come from a
  shared atomic counter. The splits are then merged per row with the log-sum-exp:

      M = max_s m_s,   L = sum_s l_s 2^(m_s - M),   out = sum_s 2^(m_s - M) acc_s / L,
      lse = M ln 2 + log L   (-inf and a zero row when L = 0: no key seen).

* Prefetch hints, so that the bus waits less for the arithmetic: as it scores a block of
  keys, the kernels that take V by rows ask the CPU for the K rows prefetch_keys ahead
  (a PREFETCH_SHARE of the core's L1 data cache: prefetch_keys) and for the V rows of the
  block, which the weights' step reads after the tile's softmax. The time per key is
  close to the time to read its K and V rows plus the time of its arithmetic: the two
  barely overlap, so every cycle of arithmetic per key still counts.
* The splits: at most as many keys as fill the core's L2 with their K and V rows
  (schedule.cache_bytes), and enough of them for every thread to take several tasks.
* No pass over K and V but the kernel's: a task that meets a score that is NaN or +-inf
  raises an alarm, and only then do the checks run (naming the argument, the overflowing
  score, or scaling v into range), as in flash_attention.
* K is never copied when it is already in the kernel's float type and C-contiguous: the
  last partial block of mr key rows of a tile is read from a zero-padded scratch copy
  of those rows, not from a padded K. (v is padded to a multiple of mr columns, a copy
  only when d_v is not one.)

jit.flash_attention(..., enable_gqa=True) routes here when k has fewer heads (axis -3) than q.
"""
import math
import typing
from typing import Literal, NamedTuple

import numba
import numpy as np
from numba import prange
from numpy.typing import ArrayLike

from .._checks import Causal, FloatArray, check_qkv, largest_magnitude, positive_int, prepare_attention, value_headroom
from .atomics import _take_next
from .compiling import _compute_dtype, _jit, _parallel_jit
from .decode_microkernels import ROWS, _accumulate_block, _block_sizes, _prefetch_rows, _row_max, _scores_block, fits
from .exponential import LN2, LOG2E, _exp2
from .isa import PATHS, PathName, _resolve_path, _tile_cols, _tile_rows
from .layout import (
    _batch_index,
    _check_scores,
    _far_from_overflow,
    _flatten,
    _mask_panel,
    _panel_keys,
    _refuse_mask_and_window,
    _remembered,
    _round_up,
)
from .microkernels import PRODUCT_MAX, PRODUCT_RESCALE, PRODUCT_ZERO, _max_in_product, _softmax_tile, _tile_product
from .schedule import BLOCK_K, cache_bytes

PREFETCH_SHARE = 4  # K rows are asked for this fraction of the L1 data cache ahead of the keys being scored
TASKS_PER_THREAD = 4  # by default at least this many tasks per thread, for the queue to even out


class _DecodeSettings(NamedTuple):
    """The scalars of a call of decode_attention as the kernel reads them, by name."""
    t_q: int
    t_k: int  # keys (k holds exactly these rows: no padding)
    group: int  # G: query heads per kv head
    scale: float  # in log2 units: scale * log2(e), in the kernel's float type
    causal: bool
    offset: int  # causal: query t sees key j when j <= t + offset; 0 when not causal
    block_k: int  # keys per tile
    k_end: int  # keys 0:k_end are seen by some query (t_k, or fewer with causal)
    split_keys: int  # keys per split, a multiple of block_k
    prefetch_keys: int  # K rows asked for ahead of the keys being scored (prefetch_keys)
    splits: int  # splits per kv head group: ceil(k_end / split_keys), at least 1
    threads: int  # prange iterations of _decode, one per thread
    scores_by_rows: bool  # the scores too by rows (_decode_rows), else in the lanes of a panel (_decode_split)
    values_by_rows: bool  # weights times V by rows (decode_microkernels.py: vectors along d_v)


class _Heads(NamedTuple):
    """For each kv head group gi (leading entry e, kv head h: gi = e * H_kv + h), the
    first row of each flattened array it reads or writes."""
    q_first: np.ndarray  # q[q_first[gi] : q_first[gi] + G] are its G query heads
    k_index: np.ndarray  # k[k_index[gi]] is its kv head
    v_index: np.ndarray  # v[v_index[gi]]
    out_first: np.ndarray  # out[out_first[gi] : out_first[gi] + G], and lse


class _Parts(NamedTuple):
    """The online-softmax state of every task (group gi, split s: task gi * splits + s)."""
    acc: np.ndarray  # (tasks, panels, d_vp, nr): sum of 2^(s - m) v, transposed panel by panel
    m: np.ndarray  # (tasks, panels, nr): running max, log2 units
    l: np.ndarray  # (tasks, panels, nr): running sum of 2^(s - m)


def default_splits(n_groups: int, k_end: int, *, threads: int | None = None, block_k: int = BLOCK_K,
                   key_bytes: int = 1024) -> tuple[int, int]:
    """Keys per split and splits per kv head group that decode_attention takes when splits is None.

    Splits of at most as many keys as fill one core's L2 with their K and V rows (key_bytes
    each key, 1024 for d = 128 in float32; schedule.cache_bytes), a multiple of block_k, and
    small enough that the n_groups * splits tasks give every thread at least
    TASKS_PER_THREAD of them, so that a thread on a slower core simply does fewer.
    Returns (split_keys, splits).
    """
    threads = numba.get_num_threads() if threads is None else threads
    want = max(1, -(-TASKS_PER_THREAD * threads // max(n_groups, 1)))  # splits per group for enough tasks
    keys = min(cache_bytes()[1] // max(key_bytes, 1), -(-k_end // want))
    return _split(k_end, _round_up(max(keys, 1), block_k))


def prefetch_keys(row_bytes: int) -> int:
    """How many K rows (row_bytes each) ahead of the keys being scored the decode kernels ask
    for: PREFETCH_SHARE of one core's L1 data cache (schedule.cache_bytes), at least one."""
    return max(1, cache_bytes()[0] // PREFETCH_SHARE // max(row_bytes, 1))


def _split(k_end, split_keys):
    return split_keys, max(1, -(-k_end // split_keys))


@_jit
def _decode_split(q, k, v, k_start, k_stop, acc_t, m, l, settings, shape):
    """One task: the packed rows of one kv head group against keys k_start:k_stop.

    q (G, T_q, d): the group's query heads; k (T_k, d), v (T_k, d_vp) its kv head;
    -> acc_t (panels, d_vp, nr), m and l (panels, nr): the online softmax of those keys
    (log2 units; m = -inf, l = 0, acc = 0 for a row that sees none of them).
    Returns True if a score (masked or not) is NaN or +-inf: see decode_attention.

    The scores and weights are the flash driver's: a panel of nr packed rows in the lanes.
    With settings.values_by_rows the weights times V run by rows (_accumulate_block: each
    row of v read once as vectors, not v transposed), and K and V are asked for ahead.
    """
    group, t_q, t_k, scale = settings.group, settings.t_q, settings.t_k, settings.scale
    causal, offset, block_k = settings.causal, settings.offset, settings.block_k
    by_rows = settings.values_by_rows
    rows, d, dtype = group * t_q, q.shape[2], q.dtype
    mr, nr = _tile_rows(shape), _tile_cols(shape, q)
    panels, d_vp = acc_t.shape[0], v.shape[1]
    _, _, cb = _block_sizes(shape, q)
    v_t = v.T
    q_t = np.zeros((panels, d, nr), dtype)  # scaled queries, transposed, packed rho = t * G + g
    for t in range(t_q):
        for g in range(group):
            rho = t * group + g
            for c in range(d):
                q_t[rho // nr, c, rho % nr] = q[g, t, c] * scale
    acc_t[:] = 0
    m[:] = -np.inf
    l[:] = 0
    acc = np.zeros((panels if by_rows else 0, nr, d_vp), dtype)  # by rows: each panel's rows of acc
    s_t = np.empty((_round_up(block_k, mr), nr), dtype)  # a tile's scores, then weights
    tail = np.zeros((mr, d), dtype)  # the last keys of k, zero-padded to mr rows
    shift = np.empty(nr, dtype)
    alpha = np.empty(nr, dtype)
    alarm = False
    for k0 in range(k_start, k_stop, block_k):
        for p in range(panels):
            rho0 = p * nr
            n, n_pad, masked = _panel_keys(min(block_k, k_stop - k0), k0, 0, rho0, nr, rows, mr, causal, offset, group)
            if n <= 0:
                continue
            q_p, acc_p = q_t[p], acc_t[p]
            in_product = not masked and _max_in_product(shape)
            shift[:] = m[p]
            mode = PRODUCT_MAX if in_product else PRODUCT_ZERO
            for r0 in range(0, n_pad, mr):
                if by_rows and p == 0:
                    _prefetch_ahead(k, v, k0 + r0, mr, settings.prefetch_keys)
                if k0 + r0 + mr <= t_k:
                    _tile_product(k, k0 + r0, 0, q_p, s_t, r0, d, shift, mode, shape)
                else:  # past the end of k: its last rows, zero-padded (masked below)
                    for i in range(mr):
                        for c in range(d):
                            tail[i, c] = k[k0 + r0 + i, c] if k0 + r0 + i < t_k else 0
                    _tile_product(tail, 0, 0, q_p, s_t, r0, d, shift, mode, shape)
            alarm |= _row_alarm(s_t.reshape(s_t.size), n_pad * nr)  # (padding lanes and keys score 0)
            if masked:  # keys past the split or padding; packed rows rho < G (k0 + j - offset)
                _mask_panel(s_t, n, n_pad, k0, 0, rho0, causal, offset, group)
            _softmax_tile(s_t, n_pad, 0 if in_product else n_pad, m[p], l[p], shift, alpha, shape)
            if by_rows:
                weights = s_t.T  # (nr, keys): row rho's weights
                for r0 in range(0, nr, ROWS):
                    for c0 in range(0, d_vp, cb):
                        _accumulate_block(weights, r0, v, k0, n, acc[p], c0, alpha, shape)
            else:
                for r0 in range(0, d_vp, mr):
                    _tile_product(v_t, r0, k0, s_t, acc_p, r0, n, alpha, PRODUCT_RESCALE, shape)
    if by_rows:
        for p in range(panels):
            acc_t[p] = acc[p].T
    return alarm


@_jit
def _prefetch_ahead(k, v, j, count, distance):
    """Ask for the K rows `distance` past keys j:j + count and for those keys' V rows (read
    after the tile's softmax)."""
    t_k = k.shape[0]
    ahead = j + distance
    if ahead < t_k:
        _prefetch_rows(k, ahead, min(count, t_k - ahead))
    if j < t_k:
        _prefetch_rows(v, j, min(count, t_k - j))


@_jit
def _row_alarm(x, n):
    """Whether x[:n] holds NaN or +-inf (an overflow, or NaN or inf in k): a count, so it vectorises."""
    bad = 0
    for j in range(n):
        bad += not abs(x[j]) < np.inf
    return bad > 0


@_jit
def _exp2_row(x, n, shift):
    """x[:n] = 2^(x - shift): a loop of _exp2 that vectorises."""
    for j in range(n):
        x[j] = _exp2(x[j] - shift)


@numba.njit(cache=True, fastmath={"reassoc"})  # reassoc only: the sum may run in vector lanes
def _row_sum(x, n):
    total = x.dtype.type(0)
    for j in range(n):
        total += x[j]
    return total


@_jit
def _decode_rows(q, k, v, k_start, k_stop, acc_t, m_out, l_out, settings, shape):
    """_decode_split with the vectors along d (decode_microkernels.py): the same task and
    results, for d a multiple of the lanes and d_v of CB vectors (settings.scores_by_rows).
    Returns True if a score (masked or not) is NaN or +-inf: see decode_attention.

    The packed rows rho = t * G + g are the rows of qs (rows padded to ROWS), the scores
    s (rows, keys) row by row: each row's online softmax runs along its keys."""
    group, t_q, t_k, scale = settings.group, settings.t_q, settings.t_k, settings.scale
    causal, offset, block_k = settings.causal, settings.offset, settings.block_k
    rows, d, d_v, dtype = group * t_q, q.shape[2], v.shape[1], q.dtype
    rb, kb, cb = _block_sizes(shape, q)
    nr = _tile_cols(shape, q)
    rows_pad = _round_up(max(rows, 1), ROWS)
    qs = np.zeros((rows_pad, d), dtype)
    for t in range(t_q):
        for g in range(group):
            for c in range(d):
                qs[t * group + g, c] = q[g, t, c] * scale
    acc = np.zeros((rows_pad, d_v), dtype)
    m = np.full(rows_pad, -np.inf, dtype)
    l = np.zeros(rows_pad, dtype)
    alpha = np.zeros(rows_pad, dtype)  # padding rows keep alpha = 0 and weights 0: acc stays 0
    s = np.zeros((rows_pad, _round_up(block_k, kb)), dtype)
    tail = np.zeros((kb, d), dtype)  # the last keys of k, zero-padded to kb rows
    minus_inf = dtype.type(-np.inf)
    alarm = False
    for k0 in range(k_start, k_stop, block_k):
        n = min(block_k, k_stop - k0)
        n_pad = _round_up(n, kb)
        for j0 in range(0, n_pad, kb):
            _prefetch_ahead(k, v, k0 + j0, kb, settings.prefetch_keys)
            if k0 + j0 + kb <= t_k:
                for r0 in range(0, rows_pad, rb):
                    _scores_block(qs, r0, k, k0 + j0, s, j0, shape)
            else:  # past the end of k: its last rows, zero-padded
                for j in range(kb):
                    for c in range(d):
                        tail[j, c] = k[k0 + j0 + j, c] if k0 + j0 + j < t_k else 0
                for r0 in range(0, rows_pad, rb):
                    _scores_block(qs, r0, tail, 0, s, j0, shape)
        for r in range(rows):
            # keys k0 + j, j < seen, are this row's: query t sees key j when j <= t + offset
            seen = n if not causal else max(0, min(n, r // group + offset - k0 + 1))
            row = s[r]
            top, bad = _row_max(row, n, seen, m[r], shape)
            alarm |= bad
            for j in range(seen, n):
                row[j] = minus_inf
            shift = dtype.type(0) if top == minus_inf else top
            alpha[r] = _exp2(m[r] - shift)
            m[r] = top
            _exp2_row(row, n, shift)
            l[r] = l[r] * alpha[r] + _row_sum(row, seen)
        for r0 in range(0, rows_pad, ROWS):
            for c0 in range(0, d_v, cb):
                _accumulate_block(s, r0, v, k0, n, acc, c0, alpha, shape)
    for r in range(rows):
        p, lane = r // nr, r % nr
        m_out[p, lane], l_out[p, lane] = m[r], l[r]
        for c in range(d_v):
            acc_t[p, c, lane] = acc[r, c]
    return alarm


@_jit
def _merge(parts, first, splits, out, lse, settings, shape):
    """Merge the splits first:first + splits of one group by their log-sum-exp (see the
    module's docstring) -> out (G, T_q, d_v) and lse (G, T_q) of that group."""
    group, t_q = settings.group, settings.t_q
    nr = _tile_cols(shape, out)
    d_v, dtype = out.shape[2], out.dtype
    weights = np.empty(splits, dtype)
    for rho in range(group * t_q):
        p, lane, g, t = rho // nr, rho % nr, rho % group, rho // group
        top = dtype.type(-np.inf)
        for s in range(splits):
            top = max(top, parts.m[first + s, p, lane])
        shift = dtype.type(0) if top == -np.inf else top
        total = dtype.type(0)
        for s in range(splits):
            weights[s] = _exp2(parts.m[first + s, p, lane] - shift)  # 0 for a split that saw no key
            total += parts.l[first + s, p, lane] * weights[s]
        seen = total > 0
        lse[g, t] = shift * LN2 + np.log(total) if seen else -np.inf
        inverse = 1 / total if seen else 0
        for c in range(d_v):
            x = dtype.type(0)
            for s in range(splits):
                x += parts.acc[first + s, p, c, lane] * weights[s]
            out[g, t, c] = x * inverse


@_parallel_jit
def _decode(q, k, v, heads, out, lse, parts, alarms, settings, shape):
    """Tasks (kv head group, key split) from a shared counter, then the merge of each group.

    q (q entries * H_q, T_q, d), k (k entries * H_kv, T_k, d), v (v entries * H_kv, T_k, d_vp)
    -> out (entries * H_q, T_q, d_v) and lse (entries * H_q, T_q); heads: a _Heads, parts: a
    _Parts. There is no pass over K and V of its own (decoding is bound by reading them):
    alarms[task] is set when a task met a score that is NaN or +-inf instead.
    """
    group, splits, threads = settings.group, settings.splits, settings.threads
    split_keys, k_end = settings.split_keys, settings.k_end
    n_groups = heads.k_index.size
    n_tasks = n_groups * splits
    counter = np.zeros(1, np.int64)
    for _ in prange(threads):  # one iteration per thread
        task = _take_next(counter)
        while task < n_tasks:  # consecutive tasks: neighbouring splits of one kv head
            gi, s = task // splits, task % splits
            q0 = heads.q_first[gi]
            k_start = s * split_keys
            task_args = (q[q0:q0 + group], k[heads.k_index[gi]], v[heads.v_index[gi]], k_start,
                         min(k_end, k_start + split_keys), parts.acc[task], parts.m[task], parts.l[task])
            if settings.scores_by_rows:
                alarms[task] = _decode_rows(*task_args, settings, shape)
            else:
                alarms[task] = _decode_split(*task_args, settings, shape)
            task = _take_next(counter)
    for gi in prange(n_groups):
        o0 = heads.out_first[gi]
        _merge(parts, gi * splits, splits, out[o0:o0 + group], lse[o0:o0 + group], settings, shape)


class _DecodeLayout(NamedTuple):
    """What a call of decode_attention does that depends only on shapes, dtypes and settings
    (the fields _check_scores reads among them)."""
    batch: tuple  # the broadcast leading dims, H_q last
    t_q: int
    t_k: int
    d_v: int
    dtype: np.dtype  # of the results
    work: type  # the kernel's float type
    scale: float  # the resolved scale (natural units)
    offset: object  # causal: query t sees key j when j <= t + offset; None if not causal
    group: int
    v_cols: int  # v zero-padded to this many columns
    heads: _Heads
    shape: object  # the TileShape: the path's, one vector wide when G * T_q rows fit in one
    panels: int
    settings: _DecodeSettings


def _layout(q, k, v, causal, block_k, scale, splits, path, grouped):
    """Every check of decode_attention's arguments but finiteness (through the front door), and
    the _DecodeLayout of the call. Without grouped (enable_gqa) the leading dims broadcast
    as in attention, and each entry is a group of one head: _heads(q, k, v, grouped)."""
    batch = None if grouped else prepare_attention(q, k, v, causal=causal, scale=scale, check_finite=False).batch
    q, k, v = _heads(np.asarray(q), np.asarray(k), np.asarray(v), grouped)
    p = prepare_attention(q, k, v, causal=causal, scale=scale, check_finite=False, grouped=True)
    wide = PATHS[_resolve_path(path)]
    work = _compute_dtype(p.dtype)
    block_k = positive_int("block_k", block_k)
    rows = p.group * p.t_q
    shape = wide.narrow if rows <= wide.narrow.nr(np.dtype(work).itemsize) or fits(
        wide.narrow, np.dtype(work).itemsize, p.d_k, p.d_v) else wide
    nr = shape.nr(np.dtype(work).itemsize)
    k_end = p.t_k if p.offset is None else max(0, min(p.t_k, p.t_q + p.offset))
    lead, h_q, h_kv = p.batch[:-1], q.shape[-3], k.shape[-3]
    entries = [_batch_index(x.shape[:-3], lead) for x in (q, k, v)]  # leading entry each one reads
    n_groups = math.prod(lead) * h_kv
    itemsize = np.dtype(work).itemsize
    if splits is None:
        split_keys, splits = default_splits(n_groups, k_end, block_k=block_k, key_bytes=(p.d_k + p.d_v) * itemsize)
    else:
        split_keys, splits = _split(k_end, _round_up(-(-k_end // positive_int("splits", splits)) or 1, block_k))
    e, h = np.divmod(np.arange(n_groups), h_kv)
    heads = _Heads(q_first=entries[0][e] * h_q + h * p.group, k_index=entries[1][e] * h_kv + h,
                   v_index=entries[2][e] * h_kv + h, out_first=e * h_q + h * p.group)
    by_rows = fits(shape, np.dtype(work).itemsize, p.d_k, p.d_v)
    # by rows, every RB rows cost a transposing tree per KB keys; in the lanes, every key costs d
    # products whether a panel's lanes are full or not: by rows pays up to one vector of rows, the
    # lanes past it, where the arithmetic sets the time
    scores_by_rows = by_rows and rows <= nr
    settings = _DecodeSettings(t_q=p.t_q, t_k=p.t_k, group=p.group, scale=work(p.scale * LOG2E),
                               causal=p.offset is not None, offset=p.offset or 0, block_k=block_k, k_end=k_end,
                               split_keys=split_keys, prefetch_keys=prefetch_keys(p.d_k * itemsize), splits=splits,
                               threads=numba.get_num_threads(),
                               scores_by_rows=scores_by_rows, values_by_rows=by_rows)
    return _DecodeLayout(batch=p.batch if grouped else batch, t_q=p.t_q, t_k=p.t_k, d_v=p.d_v, dtype=p.dtype,
                         work=work, scale=p.scale, offset=p.offset, group=p.group,
                         v_cols=p.d_v if by_rows else _round_up(p.d_v, shape.mr),
                         heads=heads, shape=shape, panels=-(-rows // nr), settings=settings)


def _check_decode_scores(q, k, v, layout):
    """_check_scores (layout.py) for grouped heads: far from overflow (one pass over q and
    k) nothing more; otherwise the kv heads are repeated for the query heads and the
    scores formed, to name the query and key that overflow."""
    if q.size == 0 or k.size == 0:
        return
    q_max, k_max = largest_magnitude(q), largest_magnitude(k)
    if _far_from_overflow(q_max, k_max, q.shape[-1], layout):
        return
    check_qkv(q, k, v)  # NaN or inf first, named
    k, v = (np.repeat(x, layout.group, axis=-3) for x in (k, v))
    _check_scores(q, k, v, layout)


def _finite_unseen(k, v, layout):
    """Whether the keys no query sees (past settings.k_end: top_left with T_q < T_k) and their
    values are finite: the kernel never reads them, and NaN or inf there is still named."""
    k_end = layout.settings.k_end
    return k_end == layout.t_k or (np.isfinite(k[..., k_end:, :]).all() and np.isfinite(v[..., k_end:, :]).all())


def _run(q, k, v, layout, unit):
    """The kernel on a call's arrays, with v divided by unit (a power of two: value_headroom)
    -> (out, lse, alarm) in the kernel's float type, shaped (entries * H_q, T_q, ...); alarm:
    a task met a score that is NaN or +-inf, or the results are not finite (then the caller
    checks)."""
    work, settings = layout.work, layout.settings
    nr = layout.shape.nr(np.dtype(work).itemsize)
    v_flat = _flatten(v, work, cols=layout.v_cols)
    count = math.prod(layout.batch)
    tasks = layout.heads.k_index.size * settings.splits
    parts = _Parts(acc=np.empty((tasks, layout.panels, layout.v_cols, nr), work),
                   m=np.empty((tasks, layout.panels, nr), work), l=np.empty((tasks, layout.panels, nr), work))
    out, lse = np.empty((count, layout.t_q, layout.d_v), work), np.empty((count, layout.t_q), work)
    alarms = np.zeros(tasks, np.bool_)
    _decode(_flatten(q, work), _flatten(k, work), v_flat if unit == 1 else v_flat / work(unit), layout.heads,
            out, lse, parts, alarms, settings, layout.shape)
    return out, lse, alarms.any() or not np.isfinite(out).all() or not (lse < np.inf).all()


@typing.overload
def decode_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: None = None, causal: Causal = False,
                     window: None = None, scale: float | None = None, enable_gqa: bool = False,
                     return_lse: Literal[False] = False, block_k: int = BLOCK_K, splits: int | None = None,
                     path: PathName | None = None) -> FloatArray: ...


@typing.overload
def decode_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: None = None, causal: Causal = False,
                     window: None = None, scale: float | None = None, enable_gqa: bool = False,
                     return_lse: Literal[True], block_k: int = BLOCK_K, splits: int | None = None,
                     path: PathName | None = None) -> tuple[FloatArray, FloatArray]: ...


def decode_attention(q: ArrayLike, k: ArrayLike, v: ArrayLike, *, mask: ArrayLike | None = None,
                     causal: Causal = False, window: int | None = None, scale: float | None = None,
                     enable_gqa: bool = False, return_lse: bool = False, block_k: int = BLOCK_K,
                     splits: int | None = None,
                     path: PathName | None = None) -> FloatArray | tuple[FloatArray, FloatArray]:
    """Attention for decoding, compiled, with the keyword tail of attncore.attention: with
    enable_gqa each kv head is read once for its G query heads.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v) -> (..., T_q, d_v), with
    return_lse also the log-sum-exp of each scaled score row (..., T_q). enable_gqa:
    grouped-query heads, q (..., H_q, T_q, d_k), k and v (..., H_kv, T_k, d), H_kv dividing
    H_q (query head h reads kv head h // G, G = H_q // H_kv: attncore.kv_head_map; H_kv = 1
    is multi-query attention), as attncore.grouped_query_attention; without it the leading
    dims broadcast, as in attncore.attention. Same results, checks and contract as those
    and jit.flash_attention (a row with no key: 0, lse -inf). causal: False, True (T_q =
    T_k), "bottom_right" (decoding: the queries are the last T_q positions) or "top_left";
    a mask or a window is refused. Made for small T_q (one token, a speculative chunk);
    any T_q works.
    splits: key ranges per kv head, run as separate tasks and merged by their log-sum-exp
    (Flash-Decoding); None takes default_splits. block_k: keys per tile. path: as
    flash_attention's.

    Raises
    ------
    ValueError
        As attncore.attention (with enable_gqa, as grouped_query_attention); also if mask or
        window is given, or splits or block_k is not a positive integer.
    """
    _refuse_mask_and_window("decode_attention", mask, window)
    layout = _remembered(_layout, q, k, v, causal, block_k, scale, splits, path, enable_gqa)  # (Python is slow)
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    # no pass over K and V but the kernel's: the checks run when it raises an alarm
    if not np.isfinite(q).all() or not _finite_unseen(k, v, layout):
        check_qkv(q, k, v)
    heads = _heads(q, k, v, enable_gqa)
    unit = 1
    out, lse, alarm = _run(*heads, layout, unit)
    if alarm:  # NaN or +-inf met: name it, or the overflowing score, or make room in v's range
        check_qkv(q, k, v)
        _check_decode_scores(q, k, v, layout)  # (an overflow hidden by the causal mask is no error)
        unit = value_headroom(v, layout.t_k, layout.work)  # acc sums up to T_k rows of v: keep it finite
        out, lse, _ = _run(*heads, layout, unit)
    out = out if unit == 1 else out * layout.work(unit)
    out = out.reshape(*layout.batch, layout.t_q, layout.d_v).astype(layout.dtype, copy=False)
    lse = lse.reshape(*layout.batch, layout.t_q).astype(layout.dtype, copy=False)
    return (out, lse) if return_lse else out


def _heads(q, k, v, grouped):
    """q, k, v (arrays) as the kernel reads them: (..., H, T, d) with grouped-query heads, else
    each entry one head of its own, (..., 1, T, d) (views)."""
    return (q, k, v) if grouped else (q[..., None, :, :], k[..., None, :, :], v[..., None, :, :])
