"""The teaching guide's data: for each assignment, the chapter to read first, the chapters it
also uses and the time to plan for. The instructors' teaching guide and the learners'
exercise table are both rendered from it (book/instructors.md, book/learners.md), so the
two pages cannot disagree; tests/test_teaching.py holds it to the assignments of
attncore.grading.engine.ASSIGNMENTS and to the chapters' labels.

Chapters are their page labels (`ch3`), rendered as MyST references (the site prints the
chapter's title; the launch notebooks, the same text).
"""
from typing import NamedTuple

from attncore.grading.engine import ASSIGNMENTS


class Exercise(NamedTuple):
    read_first: str                        # the chapter the assignment practises
    also: tuple[tuple[str, str], ...]      # (chapter, what of it), other chapters it uses
    plan: str                              # an estimate from the notebook's size, not measured


GUIDE = {
    "01-convention": Exercise("ch1", (), "45 minutes"),
    "02-simplex": Exercise("ch2", (("ch1", ""),), "60 minutes"),
    "03-masking": Exercise("ch3", (("ch4", "bottom-right causal alignment"),), "90 minutes"),
    "04-heads": Exercise("ch5", (("ch4", "the size of the KV cache"),), "60 minutes"),
    "05-flash": Exercise("ch6", (("ch7", "ungraded: performance is not scored"),), "90 to 120 minutes"),
    "06-variants": Exercise("ch8", (("ch2", "softmax-1 and the simplex"),), "75 minutes"),
    "07-real-model": Exercise("ch9", (("ch5", "splitting heads"), ("ch3", "padding")), "90 minutes"),
}


def ref(label: str) -> str:
    return f"{{ref}}`{label}`"


def _also(exercise: Exercise, style: str = " ({})") -> str:
    """The other chapters, each with what of it the assignment uses, written in style."""
    return ", ".join(ref(label) + (style.format(what) if what else "") for label, what in exercise.also)


def instructors_table() -> str:
    """The teaching guide's table (MyST Markdown): assignment, read first, also used, plan for."""
    rows = ["| assignment | read first | also used | plan for |", "|---|---|---|---|"]
    rows += [f"| `{assignment}` | {ref(e.read_first)} | {_also(e)} | {e.plan} |" for assignment, e in GUIDE.items()]
    return "\n".join(rows)


def learners_table() -> str:
    """The learners' exercise table (MyST Markdown): the notebook, the chapter to read first
    (and the others it uses), the functions to write."""
    rows = ["| exercise | read first | functions you write |", "|---|---|---|"]
    for assignment, functions in ASSIGNMENTS.items():
        exercise = GUIDE[assignment]
        first = ref(exercise.read_first) + (f"; also {_also(exercise, ': {}')}" if exercise.also else "")
        rows.append(f"| `exercises/{assignment}/{assignment}.ipynb` | {first} | "
                    f"{', '.join(f'`{f}`' for f in functions)} |")
    return "\n".join(rows)
