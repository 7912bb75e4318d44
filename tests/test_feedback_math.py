"""The feedback page's math, written as MathML when the page is made (course.feedback_page).
The pages themselves, in Chromium: tests/test_instructor_week.py."""
import json
import re
from html.parser import HTMLParser

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
    assert re.sub(r"ATTNCOREMATH[0-9a-f]{16}N(\d+)Z", r"ATTNCOREMATH\1Z", held) == kept
    assert len(maths) == len(formulas)
    assert all(m.startswith("<math") and f in m for (m, _), f in zip(maths.values(), formulas))
    assert restore_math(held, maths).count("<math") == len(formulas)


def test_tex_that_cannot_be_converted_is_shown_as_written():
    held, maths = hold_math("bad $\\begin{nothing}x$ here")
    assert restore_math(held, maths) == "bad <code>$\\begin{nothing}x$</code> here"


def test_a_placeholder_a_learner_types_stays_text_even_one_copied_from_a_page():
    held, maths = hold_math("$x$ then")
    typed = next(iter(maths))
    again, more = hold_math(f"$y$ and {typed} and ATTNCOREMATH0Z")
    page = restore_math(again, more)
    assert page.count("<math") == 1 and page.endswith(f"and {typed} and ATTNCOREMATH0Z")


class _Tags(HTMLParser):
    """Each start tag of a page with its attributes, as a browser's parser reads them."""

    def __init__(self, page):
        super().__init__()
        self.tags = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


@pytest.mark.parametrize("markdown", [
    '[b](http://e.org "$y$")',
    '<a title="$\\text{\\" onmouseover=alert(1) x=\\"}$">hi</a>',
    '<a title="$x$" class="$\\frac{a}{b}$">hi</a>',
])
def test_a_formula_inside_an_attribute_stays_its_escaped_tex(markdown):
    """MathML put into an attribute value would end it at its first quote and turn what
    follows (the learner's text among it) into attributes of the learner's choosing."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    from attncore.grading.course.pages import learner_html

    held, maths = hold_math(markdown)
    page = restore_math(learner_html(MarkdownWithMath(renderer=IPythonRenderer(escape=False))
                                     .render(held)), maths)
    (tag, attributes), = [(tag, attrs) for tag, attrs in _Tags(page).tags if tag == "a"]
    assert set(attributes) <= {"href", "title", "class"}, page
    assert all("<math" not in value and "ATTNCOREMATH" not in value
               for value in attributes.values()), page
    assert "$" in (attributes.get("title") or "") + (attributes.get("class") or ""), page


@pytest.mark.parametrize("notebook", sorted((ROOT / "exercises").glob("*/*.ipynb")),
                         ids=lambda p: p.parent.name)
def test_every_formula_of_the_exercises_becomes_mathml(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = "".join(cell["source"])
            held, maths = hold_math(text)
            assert all(m.startswith("<math") for m, _ in maths.values()), (notebook.name, text[:200])
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
