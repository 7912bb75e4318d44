"""Positive feature maps phi for linear attention, applied to the last axis.

Each is a FeatureMap: callable on an array (..., d) and printed as its formula, so an
example or a grader message can say which map it used. BY_NAME finds one by formula.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.typing import ArrayLike


class FeatureMap:
    """A named feature map phi: x (..., d) -> phi(x) (..., r), r features per row.

    Examples
    --------
    >>> from attncore.feature_maps import BY_NAME, ELU_PLUS_ONE
    >>> ELU_PLUS_ONE
    <feature map: elu(x) + 1>
    >>> ELU_PLUS_ONE(np.array([-1.0, 0.0, 2.0])).round(4).tolist()  # positive everywhere
    [0.3679, 1.0, 3.0]
    >>> BY_NAME["exp(x)"](np.zeros((2, 3))).shape
    (2, 3)
    """

    def __init__(self, name: str, function: Callable[[np.ndarray], np.ndarray]) -> None:
        self.name, self.function = name, function

    def __call__(self, x: ArrayLike) -> np.ndarray:
        return self.function(np.asarray(x))

    def __repr__(self) -> str:
        return f"<feature map: {self.name}>"

    def __deepcopy__(self, memo: dict) -> FeatureMap:
        return self  # a fixed function: copies of an input share it


def _elu_plus_one(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0))).astype(x.dtype)


ELU_PLUS_ONE = FeatureMap("elu(x) + 1", _elu_plus_one)
RELU_PLUS_EPS = FeatureMap("relu(x) + 1e-3", lambda x: (np.maximum(x, 0) + 1e-3).astype(x.dtype))
EXP = FeatureMap("exp(x)", np.exp)
EXP_PAIRS = FeatureMap("[exp(x), exp(-x)] / sqrt(2): 2 d features per row",
                       lambda x: np.concatenate([np.exp(x), np.exp(-x)], axis=-1)
                       / np.sqrt(2).astype(x.dtype))

BY_NAME = {phi.name: phi for phi in (ELU_PLUS_ONE, RELU_PLUS_EPS, EXP, EXP_PAIRS)}
