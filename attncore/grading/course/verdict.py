"""The verdict of one test cell, as the learner reads it under the cell (standard library only)."""
from dataclasses import dataclass

MAX_TEXT = 4000  # characters of one cell's feedback that reach the notebook


@dataclass(frozen=True)
class CellVerdict:
    """The grade of one test cell: passed or not, the feedback, and notes that cost nothing.

    engine.Verdict (passed, message, notes) is what run_suite knows; this adds what only
    the course knows (the sandbox and the seed, the cell's load problem, the stand-ins, a
    failure of the grader itself) and renders the cell's text, so the engine stays free of
    cells and workers.
    """

    passed: bool
    message: str
    notes: tuple = ()
    how: str = ""  # how it was graded: sandboxed or not, the seed of the hidden cases
    cases: int = 0  # how many cases the suite that was run holds (0: not known)
    suite: str = ""  # the suite that was run
    load_problem: str = ""  # what the function's own cell did when loaded ("raised ...")
    stood_in: tuple = ()  # the wrong functions it calls, replaced by references when graded again
    misconception: str = ""  # what the feedback's first line names (engine.Verdict.misconception)
    grader_error: str = ""  # the grader's own traceback when it failed: no verdict on the learner

    def text(self, how: bool = True) -> str:
        """What the learner reads in the cell's output (at most MAX_TEXT characters); how:
        end with how it was graded."""
        head = self.message if not self.passed else "\n".join(
            filter(None, [self.passed_line(), self.message]))
        lines = [head, *(f"Note: {note}" for note in self.notes),
                 *([f"({self.how})"] if how and self.how else [])]
        text = "\n".join(lines)
        return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 40] + "\n... (feedback cut short)"

    def passed_line(self) -> str:
        """One line: "passed: 5 hidden cases (suite extreme)", or "passed" when the suite is
        not known."""
        if not self.cases:
            return "passed"
        from ..engine.probe import VISIBLE_SUITES

        kind = "visible" if self.suite in VISIBLE_SUITES else "hidden"
        return (f"passed: {self.cases} {kind} case{'s' if self.cases != 1 else ''} "
                f"(suite {self.suite})")


def as_sentence(problem: str) -> str:
    """What a cell did when loaded, as a sentence: its first line ends with a full stop,
    the cell's lines it went through follow."""
    head, *lines = problem.split("\n")
    return "\n".join([head + ".", *lines])
