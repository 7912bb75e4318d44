"""The feedback page's exporter: nbconvert's HTML page, with the math of the notebook's
text written as MathML when the page is made.

Browsers draw MathML themselves, so a page needs no MathJax (2 MB inlined, or a copy beside
it that an LMS would not return with it): each student's page is one small file that
reads offline. TeX that latex2mathml cannot convert stays as its source text.
"""
import re
from html import escape

from jinja2 import pass_context
from latex2mathml.converter import convert
from nbconvert.exporters import HTMLExporter

# $$...$$ and \[...\] on their own; $...$ (not opened by a space) and \(...\) in a line
MATH = re.compile(r"\$\$(?P<block>.+?)\$\$|\\\[(?P<bracket>.+?)\\\]"
                  r"|(?<![\\$])\$(?P<inline>[^\s$][^$]*?)(?<!\\)\$(?!\$)"
                  r"|\\\((?P<paren>.+?)\\\)", re.S)
CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)  # math is not looked for in code
HELD = re.compile(r"ATTNCOREMATH(\d+)Z")


def hold_math(markdown: str) -> tuple:
    """(markdown with each formula replaced by a placeholder, [the formulas as MathML])."""
    maths = []

    def hold(match):
        tex = next(text for text in match.groupdict().values() if text is not None)
        block = match["block"] is not None or match["bracket"] is not None
        try:
            maths.append(convert(tex.strip(), display="block" if block else "inline"))
        except Exception:  # TeX it cannot read: shown as written
            maths.append(f"<code>{escape(match[0])}</code>")
        return f"ATTNCOREMATH{len(maths) - 1}Z"

    parts = CODE.split(markdown)
    return "".join(part if k % 2 else MATH.sub(hold, part)
                   for k, part in enumerate(parts)), maths


def restore_math(html: str, maths: list) -> str:
    """html with each placeholder replaced by its formula."""
    return HELD.sub(lambda match: maths[int(match[1])], html)


class FeedbackPage(HTMLExporter):
    """The HTML exporter of nbgrader generate_feedback (course.config), math as MathML."""

    @pass_context
    def markdown2html(self, context: dict, source: str) -> str:
        held, maths = hold_math(source)
        return restore_math(super().markdown2html(context, held), maths)
