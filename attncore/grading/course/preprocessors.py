"""The nbgrader preprocessor that grades out of process (see config.py)."""
import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Enum, Float, Integer

from .layout import function_of
from .runner import TIME_LIMIT, as_sentence, grade_notebook, test_cells


class GradeOutOfProcess(NbGraderPreprocessor):
    """Replace Execute: grade every test cell with course.runner and write its verdict as
    the cell's output (an error output when it fails), which nbgrader then scores."""

    time_limit = Float(TIME_LIMIT, help="Seconds for one cell to load or one call to "
                                        "return in the grading worker.").tag(config=True)
    sandbox = Enum(["bubblewrap", "none"], default_value="bubblewrap", help=(
        "Where each submission's code runs: 'bubblewrap', a sandbox of its own that cannot "
        "reach the course folder, the gradebook or the grader (Linux, package bubblewrap); "
        "'none', a plain process that can (only for trusted code). With 'bubblewrap', a "
        "machine where no sandbox starts refuses to grade.")).tag(config=True)
    seed = Integer(None, allow_none=True, help=(
        "The draw of the hidden cases: None draws a fresh seed for every notebook (its "
        "feedback names it, so the run can be replayed); an integer fixes it for every "
        "notebook, e.g. to regrade exactly as before.")).tag(config=True)

    def preprocess(self, nb, resources):
        folder = resources.get("metadata", {}).get("path") or "."
        verdicts = grade_notebook(nb.cells, cwd=folder, time_limit=self.time_limit,
                                  sandbox=self.sandbox, seed=self.seed)
        for grade_id, cell in test_cells(nb.cells):
            verdict = verdicts[grade_id]
            cell.outputs = [
                nbformat.v4.new_output("stream", name="stdout", text=verdict.text() + "\n")
                if verdict.passed else
                nbformat.v4.new_output("error", ename="AssertionError", evalue=verdict.text(),
                                       traceback=[verdict.text()])]
        # A function's own cell that raised (or never finished) when the grader ran it
        # says so under the cell, where the learner looks for it (the feedback page too).
        loaded = {function_of(gid): v.load_problem for gid, v in verdicts.items() if v.load_problem}
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            function = meta.get("grade_id")
            if cell.cell_type == "code" and meta.get("solution") and function in loaded:
                text = (f"When the grader ran this cell, it {as_sentence(loaded[function])}\nThe cell "
                        f"stopped there: what it defines after that point is missing. Restart "
                        f"the kernel and run all cells to see the whole error.")
                cell.outputs = [nbformat.v4.new_output("error", ename="CellError", evalue=text,
                                                       traceback=[text])]
        return nb, resources
