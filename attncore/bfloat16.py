"""bfloat16 rounding, emulated in NumPy (which has no bfloat16 dtype).

bfloat16 keeps float32's 8 exponent bits and the top 7 of its 23 fraction bits, so
its range is float32's and its machine epsilon is 2**-7. Rounding a float32 to
bfloat16 is rounding away its low 16 bits, to nearest with ties to even; that is
all `round_to_bfloat16` does. Emulating a bfloat16 computation means rounding the
result of every operation, as hardware does for each elementwise op.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

EPS = 2.0**-7  # spacing of bfloat16 numbers just above 1
MAX = float(np.float32(np.uint32(0x7F7F0000).view(np.float32)))  # largest finite bfloat16


def round_to_bfloat16(x: ArrayLike) -> NDArray[np.float32]:
    """Round x (any shape) to the nearest bfloat16, ties to even; returns float32, same shape.

    x is first converted to float32 (as a bfloat16 kernel's float32 accumulator would
    be). Values beyond the largest bfloat16 round to +-inf; inf and NaN pass through.

    Raises
    ------
    ValueError
        If x is not a floating-point array.

    Examples
    --------
    >>> from attncore.bfloat16 import EPS, round_to_bfloat16
    >>> round_to_bfloat16(np.array([1.0 + EPS / 2, 1.0 + 3 * EPS / 2, 3.14159])).tolist()  # ties to even
    [1.0, 1.015625, 3.140625]
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        raise ValueError(f"x must be a floating-point array, got dtype {x.dtype} with shape {x.shape}")
    with np.errstate(over="ignore"):
        x32 = np.array(x, dtype=np.float32)  # a contiguous copy that keeps 0-d shapes
    bits = x32.view(np.uint32)
    lsb = (bits >> 16) & 1  # the last kept bit: adding 0x7FFF + lsb rounds half to even
    rounded = ((bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isfinite(x32), rounded, x32)
