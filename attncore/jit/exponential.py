"""exp and 2^x written so that a loop of calls vectorises: inside kernels (_exp, _exp2, or
exp_scalar and exp2_scalar in a Numba function of your own) and over arrays (exp, exp2).

2^x: n = floor(x), r = x - n in [0, 1), 2^r by a polynomial (EXP2_COEFFICIENTS) with value
exactly 1 at r = 0, times 2^n built from exponent bits. The attention kernel's vector
version of the same steps is _VectorIR.exp2 (vector_ir.py).
"""
import math

import numpy as np
from numba import types
from numba.extending import intrinsic, overload
from numpy.typing import ArrayLike

from .._checks import FloatArray, as_float_array
from .compiling import FASTMATH, _compute_dtype, _jit

LOG2E = 1 / math.log(2)
LN2 = math.log(2)

@intrinsic
def _float_from_bits(typingctx, bits):
    """Reinterpret the bits of an int32 (int64) as a float32 (float64)."""
    to = {types.int32: types.float32, types.int64: types.float64}[bits]

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(to))

    return to(bits), codegen


def _exp_for(float_type, int_type, mantissa_bits, lo, hi, ln2_hi, ln2_lo, degree):
    """exp(x) for one float type, written so that a loop of calls vectorises."""
    f = float_type
    log2e, half, bias = f(LOG2E), f(0.5), f(np.finfo(f).maxexp - 1)
    shift, lo, hi, ln2_hi, ln2_lo = f(2.0**mantissa_bits), f(lo), f(hi), f(ln2_hi), f(ln2_lo)
    taylor = tuple(f(1 / math.factorial(k)) for k in range(degree, -1, -1))

    def exp(x):
        x = min(max(x, lo), hi)  # exp(lo) rounds to 0 and exp(hi) overflows to inf
        n = np.floor(x * log2e + half)
        r = (x - n * ln2_hi) - n * ln2_lo  # Cody-Waite: n * ln2_hi is exact
        p = taylor[0]
        for coefficient in taylor[1:]:
            p = p * r + coefficient
        n1 = np.floor(n * half)  # 2^n = 2^n1 2^n2, both factors normal, from exponent bits
        n2 = n - n1
        scale1 = _float_from_bits(int_type((n1 + bias) * shift))
        return p * scale1 * _float_from_bits(int_type((n2 + bias) * shift))

    return exp


_EXP = {
    types.float32: _exp_for(np.float32, np.int32, mantissa_bits=23, lo=-110.0, hi=89.0,
                            ln2_hi=0.693359375, ln2_lo=-2.12194440e-4, degree=7),
    types.float64: _exp_for(np.float64, np.int64, mantissa_bits=52, lo=-760.0, hi=710.0,
                            ln2_hi=6.93147180369123816490e-01, ln2_lo=1.90821492927058770002e-10, degree=13),
}

# 2^r = 1 + r (c1 + r (c2 + ...)) on [0, 1), highest degree first. float32: relative error
# 8.2e-8 in exact arithmetic (a minimax fit with the value 1 at r = 0, Lawson's iterations),
# 1.5e-7 evaluated in float32. float64: Taylor to degree 16.
EXP2_COEFFICIENTS = {
    "float32": (1.867130250881922e-3, 9.017029939492865e-3, 5.5799913377253575e-2,
                2.4016445008018833e-1, 6.931513118107434e-1, 1.0),
    "float64": tuple(LN2**k / math.factorial(k) for k in range(16, -1, -1)),
}


def _exp2_for(float_type, int_type, mantissa_bits, coefficients):
    """2^x for one float type: floor, a polynomial, exponent bits; vectorises in a loop."""
    f = float_type
    info = np.finfo(f)
    bias, shift = f(info.maxexp - 1), f(2.0**mantissa_bits)
    lo, hi = f(-(info.maxexp - 1)), f(info.maxexp)  # 2^lo builds the bits of 0.0, 2^hi those of inf
    c = tuple(f(x) for x in coefficients)

    def exp2(x):
        x = min(max(x, lo), hi)  # -inf -> lo -> exactly 0
        n = np.floor(x)
        r = x - n  # exact, 0 <= r < 1
        p = c[0]
        for coefficient in c[1:]:
            p = p * r + coefficient
        return p * _float_from_bits(int_type((n + bias) * shift))

    return exp2


_EXP2 = {
    types.float32: _exp2_for(np.float32, np.int32, mantissa_bits=23, coefficients=EXP2_COEFFICIENTS["float32"]),
    types.float64: _exp2_for(np.float64, np.int64, mantissa_bits=52, coefficients=EXP2_COEFFICIENTS["float64"]),
}


def _exp(x: float) -> float:
    """exp of a float32 or float64 scalar, for use inside kernels (implemented by _EXP)."""


def _exp2(x: float) -> float:
    """2^x of a float32 or float64 scalar, for use inside kernels (implemented by _EXP2)."""


@overload(_exp, jit_options={"fastmath": FASTMATH})
def _overload_exp(x):
    return _EXP.get(x)


@overload(_exp2, jit_options={"fastmath": FASTMATH})
def _overload_exp2(x):
    return _EXP2.get(x)


# The same functions under public names, for use inside a Numba function of your own.
exp_scalar, exp2_scalar = _exp, _exp2


@_jit
def _exp_into(x, out):
    for i in range(x.size):
        out[i] = _exp(x[i])


@_jit
def _exp2_into(x, out):
    for i in range(x.size):
        out[i] = _exp2(x[i])


def _elementwise(kernel, x):
    """kernel over x in its compute dtype (float16 in float32, as flash_attention), back to x's dtype."""
    x = as_float_array("x", x, check_finite=False)
    flat = np.require(x, _compute_dtype(x.dtype), "CW").reshape(-1)
    out = np.empty_like(flat)
    kernel(flat, out)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def exp(x: ArrayLike) -> FloatArray:
    """The vectorised exp of jit.softmax, for a float array (float16 computed in float32):
    within 1 ulp of float32 or float64, same shape and dtype."""
    return _elementwise(_exp_into, x)


def exp2(x: ArrayLike) -> FloatArray:
    """The attention kernel's vectorised 2^x of a float array (float16 computed in float32),
    same shape and dtype.

    Relative error below 2e-7 (float32) or 3e-16 (float64) where the result is normal;
    results below the normal range are 0, 2^-inf = 0, 2^x overflows to inf.
    """
    return _elementwise(_exp2_into, x)
