"""What the functions of 03-masking share: the forbidden calls, the mistakes every mask
can have (inverted polarity, off by one, a wrapping slice), and the shape-or-dtype check."""
import numpy as np

# What the learner writes, so the attncore versions trip when called (numpy only).
FORBIDDEN = ("softmax", "log_softmax", "logsumexp", "softmax_one", "attention_weights",
             "attention", "grouped_query_attention", "masks.causal", "masks.key_padding",
             "masks.sliding_window", "masks.sink_window", "masks.to_additive")

INVERTED = "inverted mask polarity"
OFF_BY_ONE = "causal mask off by one"
NEGATIVE_SLICE = "negative slice index wraps around"

INVERTED_FIX = ("in this course True means 'this query MAY attend to this key' (the convention "
                "of PyTorch's scaled_dot_product_attention); True = blocked is the opposite "
                "convention of nn.MultiheadAttention. Swap the condition (or drop the ~).")


def shape_or_dtype(layout):
    """SHAPE_OR_DTYPE for a mask: say what the dtype or the shape should be."""

    def detect(args, got, expected):
        got = np.asarray(got)
        if got.shape != expected.shape:
            detail = (f"Your mask has shape {got.shape}; the expected shape is "
                      f"{expected.shape}, that is {layout}.")
            if got.ndim == expected.ndim + 1 and got.shape[1:] == expected.shape:
                detail += " There is an extra leading axis."
            elif got.shape == expected.shape[::-1] and got.ndim == 2:
                detail += " Rows are queries and columns are keys, not the other way round."
            elif expected.ndim == 3 and got.shape == (expected.shape[0], expected.shape[2]):
                detail += (" The singleton query axis is missing: without it the mask does "
                           "not broadcast against scores of shape (B, T_q, T_k).")
            return detail
        if got.dtype != bool:
            pattern = "right" if np.issubdtype(got.dtype, np.number) and np.array_equal(
                got != 0, expected) else "also wrong"
            return (f"Your mask has dtype {got.dtype}, not bool (its pattern, read as "
                    f"nonzero = True, is {pattern}). A mask is a boolean array, True = may "
                    f"attend: an integer array used as an index picks positions 0 and 1 "
                    f"instead of masking, and a float 0/1 array is easily taken for an "
                    f"additive 0/-inf mask.")
        return None

    return detect


def shape_fix(layout):
    """The fix of SHAPE_OR_DTYPE for a mask of shape layout, such as '(t, t)'."""
    return (f"return a boolean array of shape {layout}: comparisons such as j <= i give "
            f"booleans directly (np.tri and np.ones give floats unless you pass dtype=bool "
            f"or finish with .astype(bool)).")
