"""The one exception learners see, and how it prints.

A failed probe raises FeedbackError (an AssertionError). Inside IPython and
Jupyter a custom handler prints only its message, not a traceback through the
grader's internals, so the learner reads: which misconception, the smallest
input where it shows, what came back, what was expected, and how to fix it.
"""
import dataclasses

import numpy as np


class FeedbackError(AssertionError):
    """A graded check failed; the message is written for the learner."""


def _show_message_only(shell, etype, value, tb, tb_offset=None):
    """IPython custom-exception handler: the message, coloured like an error."""
    structured = [f"\x1b[31mAssertionError\x1b[39m: {value}"]
    shell._showtraceback(etype, value, structured)
    return structured


def install_ipython_handler():
    """Print FeedbackError without a traceback when running under IPython."""
    try:
        shell = get_ipython()  # noqa: F821 (defined only inside IPython)
    except NameError:
        return
    shell.set_custom_exc((FeedbackError,), _show_message_only)


def show(value, indent="    "):
    """A compact, readable rendering of an argument or a result."""
    if isinstance(value, np.ndarray):
        with np.printoptions(precision=4, suppress=True, threshold=60, edgeitems=3, linewidth=88):
            text = f"array of shape {value.shape}, dtype {value.dtype}:\n{value}"
    elif isinstance(value, tuple) and any(isinstance(v, np.ndarray) for v in value):
        text = f"a tuple of {len(value)}:\n" + "\n".join(
            f"[{i}] {show(v, '    ').lstrip()}" for i, v in enumerate(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        text = f"{type(value).__name__} with\n" + "\n".join(
            f"{f.name} = {show(getattr(value, f.name), '    ').lstrip()}"
            for f in dataclasses.fields(value))
    else:
        text = repr(value)
    return "\n".join(indent + line for line in text.splitlines())


def message(function, headline, case=None, arguments=None, got=None, expected=None,
            detail="", fix="", show_values=True):
    """Assemble the learner-facing message; each part only when it has something to say."""
    parts = [f"{function}: {headline}"]
    if detail:
        parts.append(detail)
    if case is not None:
        parts.append(f"Smallest input where it shows ({case}):")
        parts += [f"  {name} =\n{show(value)}" for name, value in arguments.items()]
    if show_values:
        parts.append(f"Your function returned:\n{show(got)}")
        parts.append(f"Expected:\n{show(expected)}")
    if fix:
        parts.append(f"How to fix: {fix}")
    return "\n".join(parts)
