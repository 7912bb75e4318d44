"""The teaching guide's data (book/_ext/teaching.py), which the instructors' teaching guide and
the learners' exercise table both render: every assignment once, chapters that exist, and
the two tables agreeing on what to read first."""
import re
import sys
from pathlib import Path

from attncore.grading.engine import ASSIGNMENTS

BOOK = Path(__file__).resolve().parents[1] / "book"
sys.path.insert(0, str(BOOK / "_ext"))
import teaching  # noqa: E402 (book/_ext is not a package)

LABELS = {label for page in BOOK.rglob("*.md")
          for label in re.findall(r"^\(([\w-]+)\)=\s*$", page.read_text(encoding="utf-8"), re.M)}


def test_every_assignment_has_its_chapters_and_no_other():
    assert list(teaching.GUIDE) == list(ASSIGNMENTS)
    chapters = {e.read_first for e in teaching.GUIDE.values()} | {
        label for e in teaching.GUIDE.values() for label, _ in e.also}
    assert chapters <= LABELS and all(re.fullmatch(r"ch\d", label) for label in chapters)


def rows(table):
    return [line.split(" | ") for line in table.splitlines()[2:]]


def test_both_tables_say_the_same_chapter_to_read_first():
    instructors, learners = rows(teaching.instructors_table()), rows(teaching.learners_table())
    assert len(instructors) == len(learners) == len(ASSIGNMENTS)
    for (assignment, first, *_), (notebook, learner_first, functions) in zip(instructors, learners):
        name = assignment.strip("| `")
        assert notebook == f"| `exercises/{name}/{name}.ipynb`"
        assert learner_first.startswith(first)
        assert functions.rstrip(" |").split(", ") == [f"`{f}`" for f in ASSIGNMENTS[name]]


def test_also_used_chapters_are_named_with_what_of_them():
    assert "| {ref}`ch3`; also {ref}`ch4`: bottom-right causal alignment |" in teaching.learners_table()
    assert "| `01-convention` | {ref}`ch1` |  | 45 minutes |" in teaching.instructors_table()
