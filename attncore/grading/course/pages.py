"""What a learner wrote, shown as text on the instructor's pages (feedback, formgrader).

Both pages are nbgrader's templates, which render every Markdown cell as HTML as it is:
a <script> or an <img onerror> in a written answer would run in the instructor's browser,
with their Jupyter session (formgrader). markdown2html replaces nbconvert's filter of
that name (course.config): a cell the instructor locked (restored from the gradebook
before these pages are made) renders as before; any other Markdown, a learner's, is
rendered and then cleaned with bleach (nbconvert's own dependency) to a short list of
tags with no event handlers, styles, ids or scripts, so anything else shows as text.
Math stays text: the feedback page turns it into MathML (course.feedback_page), formgrader's
MathJax typesets it.
"""
import bleach
from jinja2 import pass_context
from jinja2.runtime import Context
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

LEARNER_TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "b",
                "i", "sub", "sup", "del", "code", "pre", "blockquote", "ul", "ol", "li",
                "table", "thead", "tbody", "tr", "th", "td", "a", "span", "div"}
LEARNER_ATTRIBUTES = {"a": ["href", "title"], "th": ["align"], "td": ["align"], "*": ["class"]}
LEARNER_PROTOCOLS = {"http", "https", "mailto"}


@pass_context
def markdown2html(context: Context, source: str) -> str:
    """HTML of a Markdown cell; a learner's cleaned of everything but LEARNER_TAGS."""
    cell = context.get("cell") or {}
    html = MarkdownWithMath(renderer=IPythonRenderer(
        escape=False, attachments=cell.get("attachments", {}),
        path=context.get("resources", {}).get("metadata", {}).get("path", ""))).render(source)
    return learner_html(html) if is_learners(cell) else html


def is_learners(cell: dict) -> bool:
    """Whether a cell's text may be a learner's: any cell the instructor did not lock."""
    return not cell.get("metadata", {}).get("nbgrader", {}).get("locked")


def learner_html(html: str) -> str:
    """html with only LEARNER_TAGS left as markup; every other tag shown as text."""
    return bleach.clean(html, tags=LEARNER_TAGS, attributes=LEARNER_ATTRIBUTES,
                        protocols=LEARNER_PROTOCOLS)
