"""Causal linear attention: the O(1)-state recurrence equals the causally masked quadratic form."""
import numpy as np
import pytest

import attncore


def elu_plus_one(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def masked_quadratic(q, k, v, feature_map):
    """The reference: build the (T, T) kernel matrix, keep j <= i, normalise each row, times V."""
    kernel = feature_map(q) @ np.swapaxes(feature_map(k), -1, -2)  # (..., T, T)
    kernel = np.where(attncore.masks.causal(q.shape[-2]), kernel, 0.0)
    return (kernel / kernel.sum(axis=-1, keepdims=True)) @ v


@pytest.mark.parametrize("leading", [(), (3,), (2, 4)])
def test_recurrence_equals_masked_quadratic_form(rng, leading):
    q, k = rng.normal(size=(2, *leading, 7, 5))
    v = rng.normal(size=(*leading, 7, 3))
    out = attncore.causal_linear_attention(q, k, v, elu_plus_one)
    assert out.shape == (*leading, 7, 3)
    np.testing.assert_allclose(out, masked_quadratic(q, k, v, elu_plus_one), rtol=1e-12, atol=1e-12)


def test_last_position_equals_non_causal_linear_attention(rng):
    q, k, v = rng.normal(size=(3, 6, 4))
    causal = attncore.causal_linear_attention(q, k, v, elu_plus_one)
    full = attncore.linear_attention(q[-1:], k, v, elu_plus_one)
    np.testing.assert_allclose(causal[-1], full[0], rtol=1e-12)


def test_output_at_i_ignores_later_positions(rng):
    q, k, v = rng.normal(size=(3, 6, 4))
    out = attncore.causal_linear_attention(q, k, v, elu_plus_one)
    k2, v2 = k.copy(), v.copy()
    k2[4:], v2[4:] = rng.normal(size=(2, 2, 4))
    np.testing.assert_array_equal(attncore.causal_linear_attention(q, k2, v2, elu_plus_one)[:4], out[:4])


def test_clear_errors(rng):
    q, v = rng.normal(size=(2, 5, 4))
    with pytest.raises(ValueError, match=r"T_q = T_k: q has shape \(5, 4\), k has shape \(3, 4\)"):
        attncore.causal_linear_attention(q, q[:3], v[:3], elu_plus_one)
    with pytest.raises(ValueError, match="zero normaliser"):
        attncore.causal_linear_attention(q, q, v, lambda x: np.maximum(x, 0.0) * 0.0)
