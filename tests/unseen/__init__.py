"""A class of wrong solutions written without the catalogue, one module per assignment.

Written before the diagnosis that reads the shape of an error, as learners who
never saw tests/wrong/ write their mistakes: corrections applied to the wrong sum, slices
that forget an offset, byte counts with a factor too many, masks shifted by one, head
splits that mix heads, raw NumPy errors. Each entry says what the code does wrong
(behaviour) and the words a feedback that names it contains (named_by: any one of them,
case-insensitive). tests/test_unseen.py grades each alone and requires every one caught
and at least 95% named; `python -m tests.unseen` measures both through nbgrader autograde.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Unseen:
    function: str  # the graded function (its solution cell's grade_id)
    behaviour: str  # what the code does wrong, in a learner's words
    named_by: tuple  # phrases, any one of which a feedback that names the behaviour contains
    source: str  # the whole solution cell, as a learner would write it


# What a feedback says when it names nothing: values that match no description, or the raw
# text of an exception.
GENERIC_HEADLINES = ("wrong values", "your function raised", "raised ")


def headline_and_detail(message):
    """(headline, the text that names the mistake): the first line after "function: ", and
    everything before the input the message shows."""
    named_part = message.split("\nSmallest input where it shows")[0]
    first = named_part.split("\n")[0]
    return first.split(": ", 1)[-1], named_part


def names(unseen, messages):
    """Does one of the failing cells' messages name the behaviour: a headline that is not
    generic, and one of unseen.named_by in that headline or its detail?"""
    for message in messages:
        headline, text = headline_and_detail(message)
        if headline.startswith(GENERIC_HEADLINES):
            continue
        if any(phrase.lower() in text.lower() for phrase in unseen.named_by):
            return True
    return False
