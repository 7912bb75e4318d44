"""FlashAttention and the online softmax as Numba kernels (optional: attncore[jit]).

Same algorithm and results as attncore.flash (read that first), compiled, with the same
keyword tail after q, k, v (mask, causal, window, scale, enable_gqa: the kernels mask
causally only, and refuse a mask or a window, naming attncore.flash_attention).
What makes it fast on a CPU:

* Transposed panels. A task owns a block of queries and walks it in panels of
  NR queries (NR a multiple of the machine's vector width). A panel is held as
  qT (d, NR), so scores, weights and the output accumulator are (keys, NR) and
  (d_v, NR): every vector runs along queries, and the running max and sum of
  the online softmax are lane-wise updates, with no horizontal reductions.
  Queries past a block's last full panel that fit in one vector run on the
  micro-kernel one vector wide (TileShape.narrow), not in a padded panel.
* A register-resident micro-kernel for both tile products, S = K qT and
  acc = alpha * acc + V^T P. It is a Numba @intrinsic that emits LLVM vector IR:
  an MR x NR block of the result lives in MR * NR / lanes vector registers for
  the whole reduction (llvm.fma on <lanes x float>, one scalar of the left
  factor broadcast per row), and is stored once at the end. Plain Numba loops
  cannot do this: arrays are not marked noalias, so LLVM must load and store
  the output around every multiply-add (the "loops" path keeps that version,
  for comparison). The rescaling of the accumulator by alpha happens in the
  product's first step; S needs no zeroing pass, and on a tile with no masked
  score the S product also takes the running max of its rows while they are
  still in registers, so the softmax step reads each score once.
* exp2 instead of exp: log2(e) is folded into the query scale, so a weight is
  2^(s - m): n = floor(x), r = x - n in [0, 1), 2^r by a degree-5 polynomial
  (float32; Taylor to degree 16 in float64) with value exactly 1 at r = 0, times
  2^n. With AVX-512 each step is one instruction: vreduceps returns r and
  vscalefps multiplies by 2^floor(x); elsewhere 2^n is built from exponent bits.
  Weights below the normal range are 0, and 2^-inf = 0.
  The log-sum-exp is m ln 2 + log l.
* Key tiles of 128; with causal, tiles entirely above the diagonal are skipped
  per panel. Tasks (batch entry, query block) come from a shared atomic counter:
  a thread takes the next task when it finishes one, so a core that runs slower
  (on a shared machine one often does) simply does fewer. The blocks shrink
  along the queue (default_blocks: up to 12 panels first, one panel at the
  end; with causal the queue starts at the last query), so the small ones fill
  in at the end.

The micro-kernel's shape follows the CPU features Numba compiles for (host_features:
the host's, minus AVX when Numba turns it off, e.g. NUMBA_ENABLE_AVX=0; a path slower
than the CPU could run comes with a RuntimeWarning and kernel_info()["note"]):
"avx512" (16 float32 lanes, 8 x 48 block: 24 of the 32 zmm registers), "avx2"
(8 lanes, 4 x 24: 12 of 16 ymm), "portable" (4 lanes, 4 x 8, fused only where
the target has FMA: SSE2, NEON, anything LLVM targets) and "loops" (plain Numba
loops, the kernel before the intrinsic). flash_attention(path=...) or the
environment variable ATTNCORE_JIT_PATH forces one; every path runs anywhere
(LLVM lowers wider vectors to what the CPU has), only slower off its own CPU.

Of the fast-math flags only `contract` (fused multiply-add) is on, and `reassoc`
for the sums in `softmax`: -inf marks masked scores, so no-inf or no-NaN
assumptions would be wrong here.

Kernels are compiled with cache=True (a second process loads the machine code
instead of compiling it; each path is its own signature). The cache goes where
Numba puts it: the folder NUMBA_CACHE_DIR names if set (CI sets it), else
attncore/jit/__pycache__ beside the source (ignored by git; one entry per kernel
and signature compiled, tens of MB once every path has run; safe to delete), else,
when that folder is not writable (a system-wide install), the user's cache folder.
A kernel's cache entry is stamped with every file of this package, not only the
one that defines it (compiling.py), so the kernels can inline code from
neighbouring files. Kernels run with parallel=True: prange over threads, each
taking tasks from a shared counter (see _flash); NUMBA_NUM_THREADS sets the
thread count.

One file per job, from the bottom up:

  compiling.py      fast-math flags, the njit decorators, the package-wide cache stamp
  exponential.py    exp and 2^x that vectorise: exp, exp2 (arrays), exp_scalar, exp2_scalar
  isa.py            host_features, host_path, PATHS of TileShapes, the TileShape's Numba type
  vector_ir.py      _VectorIR: the LLVM vector operations the micro-kernels are written in
  microkernels.py   _tile_product, _dot (bf16 pairs) and _softmax_tile: intrinsics, plain-loop twins
  schedule.py       default_blocks, queue_time, BLOCK_K, default_block_k, MAX_PANELS (plain Python)
  transpose.py      _transpose: square blocks of a 2-D array transposed in vector registers
  layout.py         _prepare: checks, padding, flattening; _Settings, the kernel's scalars
  atomics.py        what threads share: the task queue, pack-once flags
  flash.py          flash_attention and its kernel _flash -> _flash_block
  bf16.py           precision="bf16": bfloat16 rounding, packing, the vdpbf16ps product (what "exactly" means)
  bf16_route.py     which way precision="bf16" runs (from the CPU's features; a timed probe on request)
  flash_bf16.py     _flash_block_bf16: the flash block with native bfloat16 products
  amx.py            AMX: available() (CPU, Numba's features, the kernel's permission), the tile intrinsics
  flash_amx.py      _flash_block_amx: the flash block with bfloat16 products on AMX tiles (tdpbf16ps)
  decode.py         decode_attention: grouped-query heads, each kv head read once, split keys (Flash-Decoding)
  introspection.py  profile, kernel_info, tile_product
  tiled_softmax.py  softmax
"""
try:
    import numba  # noqa: F401
except ImportError as error:
    raise ImportError("attncore.jit needs Numba: pip install attncore[jit]") from error

from .bf16_route import PRECISIONS
from .compiling import FASTMATH
from .decode import decode_attention, default_splits
from .exponential import EXP2_COEFFICIENTS, LN2, LOG2E, exp, exp2, exp2_scalar, exp_scalar
from .flash import PHASES, flash_attention
from .introspection import kernel_info, profile, tile_product
from .isa import ENV_PATH, PATHS, TileShape, host_features, host_path
from .layout import MAX_LAYOUTS
from .microkernels import PRODUCT_MAX, PRODUCT_RESCALE, PRODUCT_ZERO
from .schedule import AMX_BLOCK_K, BLOCK_K, MAX_PANELS, default_block_k, default_blocks, queue_time
from .tiled_softmax import softmax

__all__ = [
    "AMX_BLOCK_K", "BLOCK_K", "ENV_PATH", "EXP2_COEFFICIENTS", "FASTMATH", "LN2", "LOG2E", "MAX_LAYOUTS",
    "MAX_PANELS", "PATHS", "PHASES", "PRECISIONS", "PRODUCT_MAX", "PRODUCT_RESCALE", "PRODUCT_ZERO", "TileShape",
    "decode_attention", "default_block_k", "default_blocks", "default_splits", "exp", "exp2", "exp2_scalar",
    "exp_scalar", "flash_attention", "host_features", "host_path", "kernel_info", "profile", "queue_time", "softmax",
    "tile_product",
]
