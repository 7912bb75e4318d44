"""The feedback page's math, written as MathML when the page is made (course.feedback_page).
The pages themselves, in Chromium: tests/test_instructor_week.py."""
import json
import re

import pytest

from attncore.grading.course.feedback_page import hold_math, restore_math

from .gradekit import ROOT

pytestmark = []  # the fast tier (tests/conftest.py)


@pytest.mark.parametrize("markdown, formulas, kept", [
    ("score $s_{ij} = q_i \\cdot k_j$ here", ['display="inline"'], "score ATTNCOREMATH0Z here"),
    ("$$\n\\sum_j w_{ij} = 1\n$$", ['display="block"'], "ATTNCOREMATH0Z"),
    ("\\(x\\) and \\[y\\]", ['display="inline"', 'display="block"'], "ATTNCOREMATH0Z and ATTNCOREMATH1Z"),
    ("$k(z) = $ the number", ['display="inline"'], "ATTNCOREMATH0Z the number"),
    # not math: a dollar and a space, an escaped dollar, dollars in code
    ("a $ b and c $ d", [], "a $ b and c $ d"),
    ("\\$x\\$", [], "\\$x\\$"),
    ("`a $b$ c` and\n```\n$d$\n```", [], "`a $b$ c` and\n```\n$d$\n```"),
])
def test_formulas_are_found_where_mathjax_finds_them_and_nowhere_else(markdown, formulas, kept):
    held, maths = hold_math(markdown)
    assert held == kept
    assert len(maths) == len(formulas)
    assert all(m.startswith("<math") and f in m for m, f in zip(maths, formulas))
    assert restore_math(held, maths).count("<math") == len(formulas)


def test_tex_that_cannot_be_converted_is_shown_as_written():
    held, maths = hold_math("bad $\\begin{nothing}x$ here")
    assert restore_math(held, maths) == "bad <code>$\\begin{nothing}x$</code> here"


@pytest.mark.parametrize("notebook", sorted((ROOT / "exercises").glob("*/*.ipynb")),
                         ids=lambda p: p.parent.name)
def test_every_formula_of_the_exercises_becomes_mathml(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            held, maths = hold_math(text)
            assert all(m.startswith("<math") for m in maths), (notebook.name, text[:200])
            # no dollar left outside code: every formula was found
            prose = re.sub(r"```.*?```|`[^`\n]*`", "", held, flags=re.S)
            assert not re.search(r"(?<!\\)\$", prose), (notebook.name, prose[:300])


def test_a_learners_tex_cannot_bring_markup_links_or_styles():
    held, maths = hold_math(r"$\text{<script>alert(1)</script>}$ $\href{javascript:alert(1)}{x}$ "
                            r"$\style{color:red}{x}$ and ATTNCOREMATH7Z typed by hand")
    page = restore_math(held, maths)
    assert "<script" not in page and "javascript" not in page and "style=" not in page
    assert "&lt;script&gt;" in page and page.count("<math") == 3
    assert page.endswith("and ATTNCOREMATH7Z typed by hand")
