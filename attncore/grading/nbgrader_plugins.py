"""nbgrader preprocessors added to Autograde's pipeline (see course.py).

TamperGuard runs right after Execute: if a solution cell's source reassigns the
grader, numpy's testing helpers, the builtins or the interpreter's import
machinery, every autograded test cell gets an error output (so it scores 0)
whose message says why.

TrimLongOutput caps the characters a cell's stream output keeps: nbgrader's own
LimitOutput counts lines, so a single megabyte-long line would otherwise land in
the gradebook and in the feedback HTML.
"""
import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor

from .guard import tampering_in_source


class TamperGuard(NbGraderPreprocessor):
    """Give no points to a notebook whose solution cells tamper with grading."""

    def preprocess(self, nb, resources):
        findings = []
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "code" and meta.get("solution"):
                findings += [f"cell '{meta.get('grade_id')}', {reason}"
                             for reason in tampering_in_source(cell.source)]
        if findings:
            text = ("tampering with the grader detected, so no test in this notebook gives "
                    "points: " + "; ".join(findings) + ". Solution cells must only define "
                    "your functions; remove that code, restart the kernel and run all cells.")
            self.log.warning("TamperGuard: %s", text)
            for cell in nb.cells:
                meta = cell.metadata.get("nbgrader", {})
                if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
                    cell.outputs = [nbformat.v4.new_output(
                        "error", ename="AssertionError", evalue=text,
                        traceback=[f"\x1b[31mAssertionError\x1b[39m: {text}"])]
        return nb, resources


class TrimLongOutput(NbGraderPreprocessor):
    """Keep at most max_chars characters of each stream output (the start and the end)."""

    max_chars = 20_000

    def preprocess_cell(self, cell, resources, index):
        for output in cell.get("outputs", []):
            text = output.get("text", "")
            if output.get("output_type") == "stream" and len(text) > self.max_chars:
                half = self.max_chars // 2
                output["text"] = (f"{text[:half]}\n... [{len(text) - self.max_chars} characters "
                                  f"of output removed by the grader] ...\n{text[-half:]}")
        return cell, resources
