"""Stands in, inside a grading sandbox, for a module of attncore that the exercise being
graded leaves out (course.allowed, course.sandbox): it imports, so that `import attncore`
and `from attncore import softmax` still work, but every name it is asked for is a
function that raises ForbiddenCall when called. None of the module's code is here."""
from collections.abc import Callable

from attncore.grading.observe import ForbiddenCall

__left_out__ = True  # what observe and course.wire_types read: no function of the library here


def __getattr__(name: str) -> Callable:
    if name.startswith("__"):
        raise AttributeError(name)

    def left_out(*args, **kwargs):
        raise ForbiddenCall(f"{__name__}.{name}")

    left_out.__name__ = left_out.__qualname__ = name
    return left_out
