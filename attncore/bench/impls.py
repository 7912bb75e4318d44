"""The implementations the harness compares; each maps (q, k, v, causal) -> out.

Inputs are float32 arrays (batch, heads, N, d). Torch and Numba are imported on first
use, so everything else runs (and skips them) where they are missing. The CPU peers
(PyTorch SDPA, ONNX Runtime, OpenVINO, JAX: attncore.bench.peers, the `bench-peers` extra)
are prepared once per shape in their fast-path layout (prepare); IMPLS holds them too, as
one-shot functions, for use outside the timing.
"""
import importlib.util
import math

import numpy as np

import attncore

from . import machine, peers

if importlib.util.find_spec("torch") is not None:
    # Imported now, before Numba starts its OpenMP thread pool: with the two OpenMP runtimes
    # loaded the other way round, PyTorch's SDPA ran several times slower (benchmarks/NOTES.md).
    import torch  # noqa: F401


def naive(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """Careful NumPy: one sgemm into a preallocated (N, N) score matrix, the row max, the
    subtraction, exp and the division in place, one sgemm out. One (N, N) float32 matrix
    at its peak; causal masks the upper triangle in place (square only)."""
    *lead, t_q, d = q.shape
    t_k, d_v = k.shape[-2], v.shape[-1]
    q3, k3, v3 = (x.reshape(-1, *x.shape[-2:]) for x in (q, k, v))
    out = np.empty((q3.shape[0], t_q, d_v), q.dtype)
    s = np.empty((t_q, t_k), q.dtype)
    column = np.empty((t_q, 1), q.dtype)
    scale = q.dtype.type(1 / math.sqrt(d))
    for b in range(q3.shape[0]):
        np.matmul(q3[b] * scale, k3[b].T, out=s)
        if causal:
            for i in range(t_q - 1):
                s[i, i + 1:] = -np.inf
        np.max(s, axis=1, keepdims=True, out=column)
        s -= column
        np.exp(s, out=s)
        np.sum(s, axis=1, keepdims=True, out=column)
        s /= column
        np.matmul(s, v3[b], out=out[b])
    return out.reshape(*lead, t_q, d_v)


def textbook(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """attncore.attention: the textbook formula with its temporaries (three (N, N) arrays at its peak)."""
    mask = attncore.masks.causal(q.shape[-2]) if causal else None
    return attncore.attention(q, k, v, mask=mask)


def numpy_flash(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """attncore.flash_attention: NumPy tiles of 64 x 64."""
    return attncore.flash_attention(q, k, v, causal=causal)


def jit_flash(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """attncore.jit.flash_attention with its defaults (the host CPU's micro-kernel)."""
    from attncore import jit

    return jit.flash_attention(q, k, v, causal=causal)


def torch_sdpa(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """PyTorch CPU scaled_dot_product_attention on 4-D tensors (batch, heads, N, d) that share
    the arrays' memory (with 3-D input PyTorch takes its slow math path)."""
    import torch

    q, k, v = (torch.from_numpy(x) for x in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()


def torch_backend(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> str:
    """The name of the SDPA backend PyTorch picks for these inputs (e.g. FLASH_ATTENTION)."""
    import torch

    tensors = [torch.from_numpy(x) for x in (q, k, v)]
    choice = torch._fused_sdp_choice(*tensors, is_causal=causal)
    from torch.nn.attention import SDPBackend

    return next((name for name, member in SDPBackend.__members__.items() if int(member) == choice), str(choice))


def _one_shot(name):
    def call(q, k, v, causal):
        return peers.PEERS[name].prepare(q, k, v, causal, threads=machine.cores()).result()

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"attncore.bench.peers.PEERS[{name!r}], prepared and called once."
    return call


IMPLS = {"naive": naive, "textbook": textbook, "numpy_flash": numpy_flash, "jit": jit_flash, "torch": torch_sdpa,
         **{name: _one_shot(name) for name in peers.PEER_NAMES if name != "torch"}}
REQUIRES = {"jit": "numba", **{name: peers.PEERS[name].modules for name in peers.PEER_NAMES}}
MATRICES = {"naive": 1, "textbook": 3}  # float32 (N, N) arrays held at the peak
TRACED = {"naive", "textbook", "numpy_flash", "jit"}  # allocations tracemalloc sees
RSS = TRACED | {"torch"}  # measured in a subprocess (memory.rss)


def missing(name: str) -> str | None:
    """None if the implementation's packages are installed, else the note of its skipped row."""
    required = REQUIRES.get(name, ("numpy",))
    for module in (required,) if isinstance(required, str) else required:
        if importlib.util.find_spec(module) is None:
            extra = "bench-peers" if name in peers.PEER_NAMES else "jit" if name == "jit" else "all"
            return f"skipped: {module} is not installed (pip install -e '.[{extra}]')"
    return None


def tolerance(name: str) -> float | None:
    """The largest max |error| against float64 at which a peer is still timed (None: no bound,
    the course's own implementations, which the tests hold to float32 accuracy)."""
    return peers.PEERS[name].tolerance if name in peers.PEER_NAMES else None


def prepare(name: str, q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, threads: int) -> peers.Call:
    """A peers.Call: the timed call of one implementation on these inputs (a peer in its
    fast-path layout, prepared now), result() the float32 output for the error check."""
    if name in peers.PEER_NAMES:
        return peers.PEERS[name].prepare(q, k, v, causal, threads)
    fn = IMPLS[name]
    return peers.Call(lambda: fn(q, k, v, causal), lambda out: out, {})


def float64_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """The same attention in float64 (Numba if installed, else tiled NumPy): the error yardstick."""
    exact = jit_flash if importlib.util.find_spec("numba") is not None else numpy_flash
    return exact(*(x.astype(np.float64) for x in (q, k, v)), causal)


def available() -> list[str]:
    """Names of the implementations whose packages are installed."""
    return [name for name in IMPLS if missing(name) is None]


def inputs(n: int, d: int = 64, seed: int = 0, heads: int = 1,
           batch: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v float32 (batch, heads, n, d), standard normal."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((batch, heads, n, d), dtype=np.float32) for _ in range(3))
