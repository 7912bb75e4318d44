"""Wrong solutions for this assignment (in progress)."""
from . import Wrong  # noqa: F401

WRONG = []
