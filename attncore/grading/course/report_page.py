"""The class report's page: one HTML file with its style and pictures inline (no script,
no network), readable on a phone, from the rows course.report reads.

Each misconception links to the book's section a learner who made it should read: the
chapter's "Common mistakes" for its assignment, or a closer section where one exists
(SECTION_OF_FUNCTION, SECTION_OF_WORDS). The link opens the book built in the course's
clone (_build/html) when it is there; the section's name is given either way.
"""
import os
import re
from html import escape
from pathlib import Path

# the book's section (its MyST label) for each assignment's misconceptions ...
SECTION_OF_ASSIGNMENT = {"01-convention": "ch1-mistakes", "02-simplex": "ch2-max-trick",
                         "03-masking": "ch3-mistakes", "04-heads": "ch5-mistakes",
                         "05-flash": "ch6-mistakes", "06-variants": "ch8-mistakes",
                         "07-real-model": "ch9-mistakes"}
# ... unless the function has a section of its own ...
SECTION_OF_FUNCTION = {"is_row_stochastic": "ch2-tolerance", "kv_cache_bytes": "ch4-kv-size",
                       "row_from_lse": "ch6-lse"}
# ... or the misconception's name says what it is about
SECTION_OF_WORDS = (("overflow", "ch2-max-trick"), ("subtracted instead of the maximum",
                                                     "ch2-max-trick"),
                    ("per-row maximum", "ch2-max-trick"), ("rounding allows", "ch2-tolerance"),
                    ("sentinel", "ch3-sentinels"), ("fully masked", "ch3-fully-masked"),
                    ("causal alignment", "ch3-causal"), ("bottom-right", "ch3-causal"))
STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 0 1rem;
       color: #1d1d1d; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin-top: 2rem; } h3 { font-size: 1.05rem; }
table { border-collapse: collapse; width: 100%; } td, th { text-align: left; padding: .25rem .4rem;
       border-bottom: 1px solid #ddd; vertical-align: top; overflow-wrap: break-word; }
ul.bars { list-style: none; padding: 0; } ul.bars li { margin: 0 0 .9rem; }
.named { display: flex; justify-content: space-between; gap: 1rem; }
.bar { background: #3465a4; height: .9rem; min-width: 2px; margin: .15rem 0; }
.read { font-size: .9rem; color: #444; }
.histogram { width: 100%; height: auto; max-width: 40rem; }
code { overflow-wrap: break-word; }
"""


def section_of(assignment: str, function: str, misconception: str) -> str:
    """The label of the book's section that explains a misconception of a function."""
    for words, label in SECTION_OF_WORDS:
        if words in misconception:
            return label
    return SECTION_OF_FUNCTION.get(function) or SECTION_OF_ASSIGNMENT[assignment]


def book_sections(book: Path) -> dict:
    """{label: (page stem, section title)} of the book's MyST sources in the folder `book`."""
    sections = {}
    for page in sorted(Path(book).glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for label, title in re.findall(r"^\(([\w-]+)\)=\n#+ (.+)$", text, re.M):
            sections[label] = (page.stem, title.strip())
    return sections


def book_home(root: Path) -> Path:
    """The clone whose book/ the links point into: the course's own folder when it holds
    the book, else the clone this attncore is installed from (pip install -e)."""
    clone = Path(__file__).resolve().parents[3]
    return root if any((Path(root) / "book").glob("*.md")) else clone


def render(assignment: str, rows: list, tally: dict, root: str | os.PathLike) -> str:
    """The report page of an assignment from its Student rows and misconception counts."""
    root = Path(root)
    graded = [row for row in rows if row.status == "graded"]
    most = next((row.max_score for row in rows if row.max_score is not None), 0.0)
    by_status = {status: [r for r in rows if r.status == status]
                 for status in ("graded", "ungradable", "missing")}
    mean = sum(row.score for row in graded) / len(graded) if graded else 0.0
    parts = [f"<h1>Class report: <code>{escape(assignment)}</code></h1>",
             f"<p>{len(rows)} students: {len(graded)} graded (mean score {mean:.2f} of "
             f"{most:g}), {len(by_status['ungradable'])} ungradable, "
             f"{len(by_status['missing'])} with no submission.</p>",
             "<h2>Scores</h2>", histogram([row.score for row in graded], most),
             "<h2>Misconceptions, per function</h2>",
             "<p>How many students' feedback named each misconception (a student counts once "
             "per function), and the section of the book to send them to.</p>"]
    home = book_home(root)
    sections, html_root = book_sections(home / "book"), home / "_build" / "html" / "book"
    folder = root / "reports" / assignment
    for function, counter in tally.items():
        parts.append(f"<h3><code>{escape(function)}</code></h3>")
        if not counter:
            parts.append("<p>No misconception named.</p>")
            continue
        top = max(counter.values())
        lines = []
        for name, students in counter.most_common():
            label = section_of(assignment, function, name)
            page, title = sections.get(label, (None, label))
            where = escape(f"{chapter_name(page)}{title}")
            target = html_root / f"{page}.html"
            if page and target.is_file():
                href = Path(os.path.relpath(target, folder)).as_posix()
                where = f'<a href="{escape(href)}#{escape(label)}">{where}</a>'
            lines.append(f'<li><div class="named"><span>{escape(name)}</span><span>{students} '
                         f'student{"s" if students != 1 else ""}</span></div><div class="bar" '
                         f'style="width:{100 * students / top:.1f}%"></div>'
                         f'<div class="read">Read: {where}</div></li>')
        parts.append('<ul class="bars">' + "".join(lines) + "</ul>")
    parts.append("<h2>Ungradable submissions</h2>")
    parts.append(table(["student", "why"], [(r.student, r.reason) for r in by_status["ungradable"]])
                 if by_status["ungradable"] else "<p>None.</p>")
    parts.append("<h2>Students</h2>")
    parts.append(table(["student", "score", "misconceptions named"], [
        (r.student, r.status if r.score is None else f"{r.score:g} / {r.max_score:g}",
         "; ".join(f"{f}: {name}" for f, name in r.misconceptions)) for r in rows]))
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Class report: {escape(assignment)}</title><style>{STYLE}</style></head>"
            "<body>" + "\n".join(parts) + "</body></html>\n")


def chapter_name(page: str | None) -> str:
    """"Chapter 3, " for the page 03-masking; "" for none."""
    number = page and re.match(r"(\d+)-", page)
    return f"Chapter {int(number[1])}, " if number else ""


def histogram(scores: list, most: float) -> str:
    """An inline SVG bar chart of the scores: one bar per point (at most 20 bars)."""
    if not scores:
        return "<p>No graded submission yet.</p>"
    bins = max(1, min(20, int(round(most)) + 1))
    width = most / (bins - 1) if bins > 1 else 1.0  # bin k holds scores around k * width
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(round(score / width))))] += 1
    top, w, h, bar = max(counts), 400, 160, 400 / bins
    rects = "".join(
        f'<rect x="{k * bar + 1:.1f}" y="{h - 20 - (h - 40) * n / top:.1f}" width="{bar - 2:.1f}" '
        f'height="{(h - 40) * n / top:.1f}" fill="#3465a4"><title>{n} student'
        f'{"s" if n != 1 else ""} at {k * width:g}</title></rect>' for k, n in enumerate(counts))
    ticks = "".join(f'<text x="{(k + .5) * bar:.1f}" y="{h - 6}" font-size="11" '
                    f'text-anchor="middle">{k * width:.3g}</text>'
                    for k, n in enumerate(counts) if n or k in (0, bins - 1))
    labels = (f'{ticks}<text x="2" y="14" font-size="12">{top} student{"s" if top != 1 else ""}'
              f' (points below the bars, of {most:g})</text>')
    summary = ", ".join(f"{n} at {k * width:g}" for k, n in enumerate(counts) if n)
    return (f'<svg class="histogram" viewBox="0 0 {w} {h}" role="img" aria-label="Scores: '
            f'{escape(summary)}">{rects}{labels}</svg>')


def table(header: list, rows: list) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"
