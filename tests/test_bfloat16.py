"""bfloat16 rounding against a plain reference: the nearer of the two neighbours, ties to even."""
import numpy as np
import pytest

from attncore.bfloat16 import EPS, MAX, round_to_bfloat16


def reference(x32):
    """Nearest bfloat16 by comparing the two bfloat16 neighbours of each float32 in float64."""
    out = []
    for value in x32.astype(np.float32):
        bits = int(np.float32(value).view(np.uint32))
        down = bits & 0xFFFF0000
        up = down + 0x10000
        lo, hi = (np.uint32(b).view(np.float32) for b in (down, up))
        d_lo, d_hi = abs(float(value) - float(lo)), abs(float(hi) - float(value))
        if d_lo < d_hi or (d_lo == d_hi and (down >> 16) % 2 == 0):
            out.append(lo)
        else:
            out.append(hi)
    return np.array(out, dtype=np.float32)


def test_matches_the_reference_on_random_and_tie_values():
    rng = np.random.default_rng(0)
    x = (rng.normal(size=2000) * 10.0 ** rng.integers(-20, 20, size=2000)).astype(np.float32)
    ties = (np.arange(1, 200, dtype=np.uint32) << 16 | 0x8000).view(np.float32)  # exactly halfway
    x = np.concatenate([x, ties, -ties])
    np.testing.assert_array_equal(round_to_bfloat16(x), reference(x))


def test_known_values_eps_and_range():
    assert round_to_bfloat16(np.float32(1.0)).shape == ()
    assert round_to_bfloat16(np.float32(1 + EPS / 2)) == 1.0  # a tie rounds to the even 1
    assert round_to_bfloat16(np.float32(1 + 3 * EPS / 2)) == 1 + 2 * EPS
    assert round_to_bfloat16(np.float32(1 + EPS)) == 1 + EPS
    assert MAX == float(round_to_bfloat16(np.float32(MAX)))
    assert round_to_bfloat16(np.float32(np.finfo(np.float32).max)) == np.inf
    out = round_to_bfloat16(np.array([np.inf, -np.inf, np.nan, -1e9]))
    assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])
    assert out.dtype == np.float32 and out[3] == -238 * 2.0**22  # 1e9 is not a bfloat16: their spacing there is 2**22


def test_rejects_integers():
    with pytest.raises(ValueError, match=r"x must be a floating-point array, got dtype int64 with shape \(2,\)"):
        round_to_bfloat16(np.array([1, 2], dtype=np.int64))
