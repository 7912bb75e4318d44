"""03-masking: causal_mask, key_padding_mask, sliding_window_mask, masked_softmax.

One module per graded function, each ending in its FunctionSpec (SPEC); shared.py holds
what they share. References are attncore's own: masks.causal(t_q, t_k,
causal="bottom_right"), masks.key_padding, masks.sliding_window and
softmax(scores, mask=mask).

The three mask builders return booleans, so a wrong mask is recognised by
comparing it exactly with the masks a learner with that mistake builds (the variants;
one returns None where it would say nothing, an all-True or all-False mask).
masked_softmax mistakes that differ between learners in how the damage looks
(NaN, zeros, a uniform row) are recognised by the pattern of the damage: which
rows are wrong, and what those rows' scores make of exp (masked_softmax_detectors.py).
"""
from . import causal_mask, key_padding_mask, masked_softmax, sliding_window_mask
from .shared import FORBIDDEN

# Beside the registry's two names: what the sandbox tests read.
__all__ = ["ASSIGNMENT", "SPECS", "FORBIDDEN"]

ASSIGNMENT = "03-masking"

SPECS = [causal_mask.SPEC, key_padding_mask.SPEC, sliding_window_mask.SPEC, masked_softmax.SPEC]
