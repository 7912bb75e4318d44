"""attncore: the attention weight matrix, row by row.

Rows are queries, columns are keys, and every row of the weights lies on the
probability simplex. Masks are boolean with True = "may attend". What is exported here
is what the book and the exercises use; every attention function takes the same keyword
tail after q, k, v: mask, causal, window, scale, enable_gqa.
"""
from importlib import metadata

from . import invariants, masks
from .attention import (
    attention,
    attention_scores,
    attention_weights,
    causal_linear_attention,
    grouped_query_attention,
    kv_cache_bytes,
    kv_head_map,
    linear_attention,
)
from .flash import flash_attention, weights_from_lse
from .softmax import hardmax, log_softmax, logsumexp, softmax, softmax_one, sparsemax

__all__ = [
    "__version__",
    "attention",
    "attention_scores",
    "attention_weights",
    "causal_linear_attention",
    "flash_attention",
    "grouped_query_attention",
    "hardmax",
    "invariants",
    "kv_cache_bytes",
    "kv_head_map",
    "linear_attention",
    "log_softmax",
    "logsumexp",
    "masks",
    "softmax",
    "softmax_one",
    "sparsemax",
    "weights_from_lse",
]

try:
    __version__ = metadata.version("attncore")
except metadata.PackageNotFoundError:  # the source tree on sys.path, not installed
    __version__ = "unknown"
