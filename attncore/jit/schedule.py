"""Which query blocks the kernel's threads take, and in what order: default_blocks (guided,
like OpenMP's schedule(guided)), and queue_time, the model of a shared task queue that
chapter 7 uses to explain it; and the sizes of one core's caches (cache_bytes), from which
decoding sizes its splits and how far ahead it asks for rows. Plain Python: nothing here
shapes machine code.
"""
import functools
import heapq
import re
from collections.abc import Sequence
from pathlib import Path

import numba
import numpy as np
from numpy.typing import DTypeLike

from .._checks import Causal, causal_offset
from .compiling import _compute_dtype
from .isa import PATHS, PathName, _resolve_path

BLOCK_K = 128  # keys per tile
AMX_BLOCK_K = 256  # keys per tile with bf16 products on AMX tiles: each tile's acc tiles are stored and loaded
MAX_PANELS = 12  # a block's panel states (q_t, acc_t: 24 KiB a panel in float32) stay within a core's L2
CACHES = Path("/sys/devices/system/cpu/cpu0/cache")  # where Linux describes the first core's caches
UNKNOWN_CACHES = (32 * 2**10, 2**20)  # (L1 data, L2) bytes assumed where the system does not say


def default_blocks(n_batch: int, t_q: int, causal: Causal, *, threads: int | None = None,
                   path: PathName | None = None, dtype: DTypeLike = np.float32,
                   t_k: int | None = None) -> tuple[tuple[int, int], ...]:
    """The query blocks flash_attention makes when block_q is None, as (start, stop) pairs in
    the order the task queue hands them out (with causal, from the last query back).

    Guided, like OpenMP's schedule(guided): walking the panels (nr queries each) in queue
    order, a block takes panels while each of its tasks (one per batch entry) stays within
    1/(2 threads) of the work still queued when the task is taken, and at most MAX_PANELS.
    While there is plenty of work the blocks are large, so each key tile is read once for
    many panels; towards the end they shrink to one panel, so the threads end together even
    when one core runs slower or starts later. A panel's work is the keys it sees (with
    causal, up to its last query). On one thread every block but the last is MAX_PANELS panels.
    causal: False, True, "top_left" or "bottom_right"; threads: Numba's thread count if None.
    """
    threads = numba.get_num_threads() if threads is None else threads
    t_k = t_q if t_k is None else t_k
    starts = _block_starts(n_batch, t_q, t_k, causal_offset(causal, t_q, t_k), threads, _resolve_path(path),
                           np.dtype(_compute_dtype(dtype)))
    blocks = list(zip(starts[:-1], starts[1:]))
    return tuple(blocks[::-1] if causal else blocks)


@functools.lru_cache(maxsize=256)
def _block_starts(n_batch, t_q, t_k, offset, threads, path, dtype):
    """The first query of each block of default_blocks, in query order, then t_q (cached)."""
    nr = PATHS[path].nr(dtype.itemsize)
    panels = -(-t_q // nr)
    queue = range(panels - 1, -1, -1) if offset is not None else range(panels)
    work = [t_k if offset is None else min(t_k, max(0, min(t_q, (p + 1) * nr) + offset)) for p in queue]
    queued, sizes, first = n_batch * sum(work), [], 0
    while first < panels:
        # the last of the block's n_batch tasks is taken when queued - (n_batch - 1) * taken is left
        size, taken = 1, work[first]
        while (first + size < panels and size < MAX_PANELS
               and (threads == 1 or (taken + work[first + size]) * (2 * threads + n_batch - 1) <= queued)):
            taken += work[first + size]
            size += 1
        sizes.append(size)
        first, queued = first + size, queued - n_batch * taken
    starts = [0]
    for size in sizes[::-1] if offset is not None else sizes:
        starts.append(min(t_q, starts[-1] + size * nr))
    return tuple(starts)


def queue_time(work: Sequence[float], speeds: Sequence[float]) -> float:
    """When the last of the tasks ends if each thread, as it finishes one, takes the next:
    work in queue order, speeds[t] = the work thread t does per unit of time."""
    free = [(0.0, t) for t in range(len(speeds))]
    for w in work:
        start, t = heapq.heappop(free)
        heapq.heappush(free, (start + w / speeds[t], t))
    return max(end for end, _ in free)


def default_block_k(bf16_products: str | None = None) -> int:
    """Keys per tile when flash_attention's block_k is None: AMX_BLOCK_K for bf16 products on AMX tiles
    (bf16_route.route: "amx"; its acc tiles are stored and loaded once per key tile, so longer tiles
    pay), else BLOCK_K."""
    return AMX_BLOCK_K if bf16_products == "amx" else BLOCK_K


@functools.cache
def cache_bytes(caches: Path = CACHES) -> tuple[int, int]:
    """(L1 data, L2) bytes of one core's caches, as Linux reports them under caches (the folders
    index0, index1, ... with level, type and size); UNKNOWN_CACHES where it does not say."""
    found = {}
    for index in sorted(caches.glob("index*")):
        try:
            level, kind, size = ((index / name).read_text().strip() for name in ("level", "type", "size"))
        except OSError:
            continue
        number = re.fullmatch(r"(\d+)([KMG]?)", size)
        if number and kind in ("Data", "Unified") and level in ("1", "2"):
            found[int(level)] = int(number[1]) * {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[number[2]]
    return found.get(1, UNKNOWN_CACHES[0]), found.get(2, UNKNOWN_CACHES[1])
