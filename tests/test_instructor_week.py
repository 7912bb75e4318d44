"""The instructor's week, end to end, with the repository's nbgrader_config.py and no
renaming: a Canvas and a Moodle "download all submissions" archive of one class (right,
wrong, late, resubmitted, Mac-zipped, not JSON, a copied cell, nothing written) go through
`nbgrader zip_collect`, `nbgrader autograde` twice and then on two cores, the feedback, the
class report and the exports to both LMSs; the report and a feedback page are read in
Chromium.
"""
import csv
import html
import json
import re
import zipfile
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from attncore.grading.course.layout import VERDICT_KEY, WORK
from attncore.grading.engine import ASSIGNMENTS, SPECS
from attncore.grading.engine.probe import GENERIC

from .gradekit import Course, pasted, release_notebook, submission
from .test_catalogue import WRONG
from .test_site import CHROMIUM, CHROMIUM_FLAGS
from .test_tamper import last_wrong

pytestmark = [pytest.mark.slow, pytest.mark.pipeline, pytest.mark.xdist_group("instructor-week")]
A = "01-convention"
NB = f"{A}.ipynb"
PHONE, DESKTOP = {"width": 390, "height": 844}, {"width": 1280, "height": 900}


WRONG_AXIS = next(w for w in WRONG[A] if w.function == "attention_weights"
                  and w.misconception == "softmax over the wrong axis")
RIGHT = nbformat.writes(submission(A))
BLANK = nbformat.writes(nbformat.read(release_notebook(A), as_version=4))
CANVAS = {  # a Canvas download: sortable name, user id, the upload's id, the file's name
    f"smithalice_101_5001_{NB}": RIGHT,
    f"jonesbob_LATE_102_5002_{NB}": nbformat.writes(submission(A, {
        last_wrong(A).function: last_wrong(A).source})),
    f"diazcarol_103_5003_{NB}": BLANK,  # then uploaded again, right, as "-1"
    f"diazcarol_103_5004_{A}-1.ipynb": RIGHT,
    f"nguyendave_104_5005_{NB}": RIGHT[:300],  # cut short: not JSON
    f"leeerin_105_5006_{NB}": nbformat.writes(pasted(submission(A))),
    f"__MACOSX/._smithalice_101_5001_{NB}": "\0\5\26\7AppleDouble",
    "smithalice_101_5001_notes.pdf": "%PDF-1.4",
}
MOODLE = {  # a Moodle download: a folder per student, or files with the same prefix
    f"Frank Li_201_assignsubmission_file/{NB}": nbformat.writes(submission(A, {
        WRONG_AXIS.function: WRONG_AXIS.source})),
    f"Gina Ro_202_assignsubmission_file_/{NB}": RIGHT,
    f"Hank Oz_203_assignsubmission_file_{NB}": BLANK,
    "Frank Li_201_assignsubmission_onlinetext/onlinetext.html": "<p>see the notebook</p>",
}
GRADED = {"101", "102", "103", "105", "201", "202", "203"}
UNGRADABLE, MISSING = {"104"}, {"999"}


def snapshot(course):
    """{student: [(grade id, score, what the cell shows, the grader's metadata)]}."""
    graded = {}
    for folder in sorted((course.root / WORK / "autograded").iterdir()):
        cells = nbformat.read(course.autograded(A, folder.name), as_version=4).cells
        verdicts = {c.metadata["nbgrader"]["grade_id"]: c.metadata[VERDICT_KEY]
                    for c in cells if VERDICT_KEY in c.metadata}
        graded[folder.name] = [(g.grade_id, g.score, g.output, verdicts.get(g.grade_id))
                               for g in course.grades(A, folder.name)]
    return graded


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    course = Course(tmp_path_factory.mktemp("week"), [A])
    course.generate(A)
    archive = course.root / WORK / "downloaded" / A / "archive"
    archive.mkdir(parents=True)
    for name, files in (("canvas.zip", CANVAS), ("moodle.zip", MOODLE)):
        with zipfile.ZipFile(archive / name, "w") as download:
            for path, text in files.items():
                download.writestr(path, text)
    runs = {"collect": course.run("nbgrader", "zip_collect", A),
            "enrol": course.run("nbgrader", "db", "student", "add", "999"),
            "first": course.run("nbgrader", "autograde", A)}
    course.first = snapshot(course)
    runs["again"] = course.run("nbgrader", "autograde", A, "--force")
    course.again = snapshot(course)
    runs["parallel"] = course.run("attncore.grading", "autograde", A, "--jobs", "2", "--force")
    course.parallel = snapshot(course)
    course.reports, course.exports = course.root / "reports" / A, {}
    for name, args in {"feedback": ("nbgrader", "generate_feedback", A, "--force"),
                       "report": ("attncore.grading", "report", A),
                       "canvas-zero": ("export", "canvas", "--missing-as-zero"),
                       "canvas": ("export", "canvas"),
                       "moodle-100": ("export", "moodle", "--out-of", "100"),
                       "moodle": ("export", "moodle"),
                       "canvas-feedback": ("attncore.grading", "feedback", A, "--lms", "canvas"),
                       "moodle-feedback": ("attncore.grading", "feedback", A, "--lms", "moodle"),
                       "seed": ("attncore.grading", "seed", A, "101", "201")}.items():
        if args[0] == "export":
            runs[name] = course.run("attncore.grading", "export", A, "--lms", *args[1:])
            course.exports[name] = table(course.reports / f"{args[1]}-grades.csv")
        else:
            runs[name] = course.run(*args)
    # last, a download no layout reads: zip_collect stops before it copies anything
    course.submitted = {p: p.read_bytes() for p in (course.root / WORK / "submitted").rglob("*.ipynb")}
    (archive / "my homework.ipynb").write_text(RIGHT)
    runs["unreadable"] = course.run("nbgrader", "zip_collect", A, "--force")
    course.runs = runs
    return course


def table(path):
    with open(path, newline="", encoding="utf-8") as file:
        return list(csv.reader(file))


def test_both_downloads_are_collected_as_they_come(week):
    collected = week.runs["collect"]
    assert collected.returncode == 0, collected.stderr
    warnings = [line for line in collected.stderr.splitlines()
                if "WARNING" in line and "Directory not found. Creating" not in line]
    assert not warnings, warnings
    submitted = week.root / WORK / "submitted"
    assert sorted(p.relative_to(submitted).as_posix() for p in submitted.rglob("*") if p.is_file()) \
        == [f"{student}/{A}/{NB}" for student in sorted(GRADED | UNGRADABLE)]
    # the resubmission, not the first upload; the copy of the notebook, not the Mac's metadata
    assert (submitted / "103" / A / NB).read_text() == RIGHT
    record = json.loads((week.root / WORK / "lms" / f"{A}.json").read_text())
    assert record["102"]["late"] and record["201"] == {
        "file": NB, "late": False, "lms": "moodle", "lms_id": "201", "name": "Frank Li"}


def test_a_name_no_layout_reads_stops_zip_collect_and_names_the_file(week):
    collected = week.runs["unreadable"]
    assert collected.returncode == 1
    assert "my homework.ipynb: the name follows no layout" in collected.stderr
    after = {p: p.read_bytes() for p in (week.root / WORK / "submitted").rglob("*.ipynb")}
    assert after == week.submitted  # nothing copied, nothing removed


def test_every_student_is_graded_or_ungradable_with_a_reason_and_autograde_says_so(week):
    for name in ("first", "again"):
        result = week.runs[name]
        assert result.returncode == 1, result.stderr  # an ungradable submission: exit 1 at the end
        summary = [line for line in result.stderr.splitlines() if line.startswith("[attncore]")]
        mean = sum(score for student in GRADED for _, score, _, _ in week.first[student]) / len(GRADED)
        assert summary == [f"[attncore] {A}: {len(GRADED)} graded, mean score {mean:.2f} / 11; "
                           f"1 ungradable (why: python -m attncore.grading report {A})"], summary
    assert set(week.first) == GRADED
    rows = {row[0]: row for row in table(week.reports / "students.csv")[1:]}
    assert {s for s, row in rows.items() if row[1] == "graded"} == GRADED
    assert {s for s, row in rows.items() if row[1] == "ungradable"} == UNGRADABLE
    assert {s for s, row in rows.items() if row[1] == "missing"} == MISSING
    assert rows["104"][2] == "" and "is not a Jupyter notebook" in rows["104"][5]


def test_a_regrade_gives_every_student_the_same_grades_and_cases(week):
    assert week.again == week.first  # scores, feedback (its inputs drawn), metadata
    seeds = {}
    for student, cells in week.first.items():
        (seeds[student],) = {verdict["seed"] for *_, verdict in cells if verdict}
        assert any(f"drawn with seed {seeds[student]}" in output for _, _, output, _ in cells)
    assert len(set(seeds.values())) == len(GRADED)  # a draw of one's own
    printed = dict(line.split("\t") for line in week.runs["seed"].stdout.splitlines())
    assert printed == {s: str(seeds[s]) for s in ("101", "201")}


def test_grading_on_two_cores_gives_the_serial_grades(week):
    result = week.runs["parallel"]
    assert result.returncode == 1, result.stderr  # the ungradable one, as serially
    assert week.parallel == week.first
    summary = next(line for line in result.stderr.splitlines() if line.startswith("[attncore]"))
    ahead = int(re.search(r"\((\d+) graded ahead in parallel\)", summary)[1])
    # each notebook graded in the pool, the one with a pasted cell too (repaired there first)
    assert ahead == len(GRADED), summary


def named_in_feedback(page):
    """[(function, misconception)] that the failing test cells of a feedback page name on
    their first line, each once."""
    named = set(GENERIC) | {m.name for f in ASSIGNMENTS[A] for m in SPECS[f].misconceptions}
    found = []
    for text in re.findall(r'output_error">\s*<pre>(.*?)</pre>', page, re.S):
        function, _, headline = html.unescape(re.sub("<[^>]+>", "", text)).strip().partition(": ")
        headline = headline.splitlines()[0] if headline else ""
        if function in ASSIGNMENTS[A] and headline in named and (function, headline) not in found:
            found.append((function, headline))
    return found


def test_the_report_counts_what_the_feedback_says(week):
    assert week.runs["feedback"].returncode == 0, week.runs["feedback"].stderr
    from_pages = Counter()
    per_student = {}
    for student in GRADED:
        page = (week.root / WORK / "feedback" / student / A / f"{A}.html").read_text()
        per_student[student] = named_in_feedback(page)
        from_pages.update(per_student[student])
    counts = {(f, m): int(n) for f, m, n in table(week.reports / "misconceptions.csv")[1:]}
    assert counts == dict(from_pages)
    assert counts[(WRONG_AXIS.function, WRONG_AXIS.misconception)] == 1
    assert counts[(last_wrong(A).function, last_wrong(A).misconception)] == 1
    rows = {row[0]: row[4] for row in table(week.reports / "students.csv")[1:]}
    assert all(rows[s] == ";".join(f"{f}: {m}" for f, m in per_student[s]) for s in GRADED)


def test_the_exports_are_what_canvas_and_moodle_import(week):
    scores = {s: sum(score for _, score, _, _ in week.first[s]) for s in GRADED}
    canvas = week.exports["canvas"]
    assert canvas[:2] == [["Student", "ID", "Section", A], ["Points Possible", "", "", "11"]]
    by_id = {row[1]: (row[0], row[3]) for row in canvas[2:]}
    # the Canvas students only; the ungradable one and the one with no submission empty
    assert by_id == {"101": ("smithalice", f"{scores['101']:g}"),
                     "102": ("jonesbob", f"{scores['102']:g}"),
                     "103": ("diazcarol", f"{scores['103']:g}"),
                     "104": ("nguyendave", ""), "105": ("leeerin", f"{scores['105']:g}"),
                     "999": ("999", "")}
    zero = {row[1]: row[3] for row in week.exports["canvas-zero"][2:]}
    assert zero == {**{k: v for k, (_, v) in by_id.items()}, "104": "0", "999": "0"}
    moodle = week.exports["moodle"]
    assert moodle[0] == ["Identifier", "Full name", "Grade", "Maximum Grade", "Last modified (grade)"]
    assert {row[0]: (row[1], row[2], row[3]) for row in moodle[1:]} == {
        f"Participant {s}": (name, f"{scores[s]:g}", "11")
        for s, name in (("201", "Frank Li"), ("202", "Gina Ro"), ("203", "Hank Oz"))}
    assert {row[0]: (float(row[2]), row[3]) for row in week.exports["moodle-100"][1:]} == {
        f"Participant {s}": (pytest.approx(scores[s] * 100 / 11), "100") for s in ("201", "202", "203")}
    with zipfile.ZipFile(week.reports / "canvas-feedback.zip") as pages:
        assert sorted(pages.namelist()) == sorted(
            f"{Path(name).stem}-{A}-feedback.html" for name in (
                f"smithalice_101_5001_{NB}", f"jonesbob_LATE_102_5002_{NB}",
                f"diazcarol_103_5004_{A}-1.ipynb", f"leeerin_105_5006_{NB}"))
    with zipfile.ZipFile(week.reports / "moodle-feedback.zip") as pages:
        assert sorted(pages.namelist()) == [f"{name}_{s}_assignsubmission_file_{A}-feedback.html"
                                            for s, name in (("201", "Frank Li"), ("202", "Gina Ro"),
                                                            ("203", "Hank Oz"))]


@pytest.fixture(scope="module")
def chromium():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


def opened(chromium, path, viewport):
    """(page, console errors, requests beyond the file) of a local file in Chromium."""
    page = chromium.new_page(viewport=viewport)
    errors, fetched = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(path.as_uri())
    return page, errors, fetched


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_the_report_reads_offline_on_a_phone_too(week, chromium, viewport):
    page, errors, fetched = opened(chromium, week.reports / "report.html", viewport)
    assert not errors and not fetched
    assert page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
    bars = page.eval_on_selector_all("svg.histogram rect", "rs => rs.map(r => r.getBBox().height)")
    scores = {round(sum(score for _, score, _, _ in cells)) for cells in week.first.values()}
    assert sum(1 for h in bars if h > 0) == len(scores)
    named = page.eval_on_selector_all("ul.bars li .named span:first-child", "s => s.map(e => e.textContent)")
    counts = table(week.reports / "misconceptions.csv")[1:]
    assert sorted(named) == sorted(m for _, m, _ in counts)
    assert "is not a Jupyter notebook" in page.inner_text("body")
    page.close()


def test_a_feedback_page_is_small_and_its_math_is_drawn_offline(week, chromium):
    path = week.root / WORK / "feedback" / "102" / A / f"{A}.html"
    assert path.stat().st_size < 300_000
    text = path.read_text()
    assert "MathJax" not in text and "<math" in text
    page, errors, fetched = opened(chromium, path, PHONE)
    assert not errors and not fetched
    widths = page.eval_on_selector_all("math", "ms => ms.map(m => m.getBoundingClientRect().width)")
    assert widths and all(w > 0 for w in widths)
    # the course's own parts of nbgrader's page: the score index, the suites, the draw
    assert "Score: 1.0 / 1.0" in page.inner_text("#toc") and "hidden suite" in text
    assert re.search(r"hidden cases drawn with seed \d+", text)
    page.close()
