"""The math of the feedback page nbgrader makes of a submission, written as MathML when
the page is made.

Browsers draw MathML themselves, so a page needs no MathJax (2 MB inlined, or a copy beside
it that an LMS would not return with it): each student's feedback is one small file that
reads offline. markdown2html replaces nbconvert's filter of that name (course.config): the
formulas of a cell are taken out, the rest goes through course.pages (which shows a
learner's Markdown as text), and the formulas come back as MathML cleaned to MathML's own
tags (no link, style or script a learner's TeX could ask for). TeX that latex2mathml
cannot convert stays as its source text, and so does a formula written inside a tag's
attribute (a link's title): MathML there would end the attribute and start others. The
placeholders that hold the formulas meanwhile carry a random part, so text a learner types
cannot pass for one.
"""
import re
import secrets
from html import escape

import bleach
from jinja2 import pass_context
from latex2mathml.converter import convert

from .pages import markdown2html as text_of_cell

# $$...$$ and \[...\] on their own; $...$ (not opened by a space) and \(...\) in a line
MATH = re.compile(r"\$\$(?P<block>.+?)\$\$|\\\[(?P<bracket>.+?)\\\]"
                  r"|(?<![\\$])\$(?P<inline>[^\s$][^$]*?)(?<!\\)\$(?!\$)"
                  r"|\\\((?P<paren>.+?)\\\)", re.S)
CODE = re.compile(r"(```.*?```|~~~.*?~~~|`[^`\n]*`)", re.S)  # math is not looked for in code
# a tag, its quoted attribute values allowed to hold ">"
TAG = re.compile(r"""(<[!/?a-zA-Z][^>"']*(?:(?:"[^"]*"|'[^']*')[^>"']*)*>)""")
MATHML_TAGS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup",
               "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable",
               "mtr", "mtd", "mstyle", "mpadded", "menclose", "mphantom"}
MATHML_ATTRIBUTES = ["xmlns", "display", "mathvariant", "stretchy", "fence", "separator",
                     "lspace", "rspace", "accent", "accentunder", "columnalign", "rowalign",
                     "columnspacing", "rowspacing", "width", "height", "depth",
                     "linethickness", "movablelimits", "largeop", "symmetric", "minsize",
                     "maxsize", "displaystyle", "scriptlevel", "notation", "mathsize"]


def mathml(tex: str, block: bool) -> str | None:
    """tex as MathML with only MathML's tags and presentation attributes, or, when it
    cannot be converted, as written."""
    try:
        converted = convert(tex.strip(), display="block" if block else "inline")
    except Exception:  # TeX it cannot read
        return None
    return bleach.clean(converted, tags=MATHML_TAGS, attributes={"*": MATHML_ATTRIBUTES},
                        protocols=set())


def hold_math(markdown: str) -> tuple:
    """(markdown with each formula replaced by a placeholder, {placeholder: (the formula
    as MathML, its TeX as written)})."""
    maths, nonce = {}, secrets.token_hex(8)

    def hold(match):
        tex = next(text for text in match.groupdict().values() if text is not None)
        block = match["block"] is not None or match["bracket"] is not None
        placeholder = f"ATTNCOREMATH{nonce}N{len(maths)}Z"
        maths[placeholder] = (mathml(tex, block) or f"<code>{escape(match[0])}</code>", match[0])
        return placeholder

    parts = CODE.split(markdown)
    return "".join(part if k % 2 else MATH.sub(hold, part)
                   for k, part in enumerate(parts)), maths


def restore_math(html: str, maths: dict) -> str:
    """html with each placeholder replaced: by its MathML in text, by its TeX (escaped) in
    a tag."""
    if not maths:
        return html
    held = re.compile("|".join(map(re.escape, maths)))
    return "".join(
        held.sub(lambda match: escape(maths[match[0]][1], quote=True), part) if k % 2
        else held.sub(lambda match: maths[match[0]][0], part)
        for k, part in enumerate(TAG.split(html)))


@pass_context
def markdown2html(context: dict, source: str) -> str:
    """HTML of a Markdown cell (course.pages), its math as MathML."""
    held, maths = hold_math(source)
    return restore_math(text_of_cell(context, held), maths)
