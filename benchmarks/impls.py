"""The implementations the harness compares; each maps (q, k, v, causal) -> out.

Inputs are float32 arrays (1, 1, N, d). Torch and Numba are imported on first
use, so the harness runs (and skips them) where they are missing.
"""
import importlib.util

import numpy as np

import attncore


def naive(q, k, v, causal):
    """attncore.attention: the full (N, N) scores and weights, with a boolean causal mask."""
    mask = attncore.masks.causal(q.shape[-2]) if causal else None
    return attncore.attention(q, k, v, mask=mask)


def numpy_flash(q, k, v, causal):
    """attncore.flash_attention: NumPy tiles of 64 x 64."""
    return attncore.flash_attention(q, k, v, causal=causal)


def jit_flash(q, k, v, causal):
    """attncore.jit.flash_attention with its default blocks."""
    from attncore import jit

    return jit.flash_attention(q, k, v, causal=causal)


def torch_sdpa(q, k, v, causal):
    """PyTorch CPU scaled_dot_product_attention (the tensors share the arrays' memory)."""
    import torch

    q, k, v = (torch.from_numpy(x) for x in (q, k, v))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal).numpy()


IMPLS = {"naive": naive, "numpy_flash": numpy_flash, "jit": jit_flash, "torch": torch_sdpa}
REQUIRES = {"jit": "numba", "torch": "torch"}


def float64_reference(q, k, v, causal):
    """The same attention in float64 (Numba if installed, else tiled NumPy): the error yardstick."""
    exact = jit_flash if importlib.util.find_spec("numba") is not None else numpy_flash
    return exact(*(x.astype(np.float64) for x in (q, k, v)), causal)


def available():
    """Names of the implementations whose package is installed."""
    return [name for name in IMPLS if importlib.util.find_spec(REQUIRES.get(name, "numpy")) is not None]


def inputs(n, d, seed=0):
    """q, k, v float32 (1, 1, n, d), standard normal."""
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((1, 1, n, d), dtype=np.float32) for _ in range(3))
