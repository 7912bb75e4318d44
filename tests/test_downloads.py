"""Reading an LMS download's names (course.downloads): who each notebook belongs to, which
upload is the latest, and what is not a student's work. The real zip_collect runs in
tests/test_instructor_week.py."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attncore.grading.course.downloads import ignored, parse, plan, read_roster

pytestmark = []  # the fast tier (tests/conftest.py)
NB = "03-masking.ipynb"


@pytest.mark.parametrize("path, lms, lms_id, notebook, name, late", [
    # Canvas: sortable name, user id, the uploaded file's id, the name as uploaded
    (f"subs/smithalice_12345_67890_{NB}", "canvas", "12345", NB, "smithalice", False),
    (f"subs/jonesbob_LATE_23456_78901_{NB}", "canvas", "23456", NB, "jonesbob", True),
    ("jonesbob_23456_78902_03-masking-1.ipynb", "canvas", "23456", NB, "jonesbob", False),
    ("jonesbob_23456_78902_my_own_name.ipynb", "canvas", "23456", "my_own_name.ipynb",
     "jonesbob", False),
    # Moodle: a folder per student (Moodle 4.1 on, and before it with a trailing _) ...
    (f"course-A-7/Carol Diaz_345678_assignsubmission_file/{NB}", "moodle", "345678", NB,
     "Carol Diaz", False),
    (f"Carol Diaz_345678_assignsubmission_file_/{NB}", "moodle", "345678", NB, "Carol Diaz", False),
    ("Carol Diaz_345678_assignsubmission_file_/sub/dir/x.ipynb", "moodle", "345678",
     "sub/dir/x.ipynb", "Carol Diaz", False),
    # ... or flat, with "download as folders" off
    (f"Dave Li_445566_assignsubmission_file_{NB}", "moodle", "445566", NB, "Dave Li", False),
    # the plain name nbgrader documents
    (f"alice_{NB}", "plain", "alice", NB, "", False),
    (f"/home/t_a/my_course/s123_{NB}", "plain", "s123", NB, "", False),
])
def test_each_layout_gives_the_lms_id_and_the_notebook(path, lms, lms_id, notebook, name, late):
    download = parse(path)
    assert (download.lms, download.lms_id, download.notebook, download.name, download.late) == (
        lms, lms_id, notebook, name, late)


@pytest.mark.parametrize("path", [NB, "my homework.ipynb", f".hidden_{NB}", f"_{NB}"])
def test_a_name_of_no_layout_is_not_guessed(path):
    assert parse(path) is None


@pytest.mark.parametrize("path, junk", [
    (f"__MACOSX/._smithalice_12345_67890_{NB}", True),
    (f"zip/__MACOSX/subs/._alice_{NB}", True),
    (f"zip/.ipynb_checkpoints/alice_{NB}", True),
    ("zip/.DS_Store", True),
    (f"zip/smithalice_12345_67890_{NB}", False),
])
def test_macos_metadata_and_hidden_files_are_no_students_work(path, junk):
    assert ignored(path) is junk


def test_the_latest_upload_of_each_student_is_kept_and_the_rest_superseded():
    paths = [f"a/smithalice_12345_67890_{NB}", f"a/smithalice_LATE_12345_67999_{NB}",
             "a/smithalice_12345_67999_03-masking-1.ipynb",  # the same file uploaded again
             f"a/jonesbob_23456_70000_{NB}", "m/Carol Diaz_345678_assignsubmission_file/x.ipynb"]
    result = plan(paths, [NB])
    assert not result.problems
    assert result.kept == {"a/smithalice_12345_67999_03-masking-1.ipynb": ("12345", NB),
                           f"a/jonesbob_23456_70000_{NB}": ("23456", NB),
                           "m/Carol Diaz_345678_assignsubmission_file/x.ipynb": ("345678", NB)}
    assert sorted(result.superseded) == [f"a/smithalice_12345_67890_{NB}",
                                         f"a/smithalice_LATE_12345_67999_{NB}"]


def test_uploads_canvas_does_not_number_are_ordered_by_when_their_archive_came():
    first, second = (f"{z}/Carol Diaz_345678_assignsubmission_file/{NB}" for z in ("old", "new"))
    result = plan([first, second], [NB], downloaded_at=lambda p: {"old": 1.0, "new": 2.0}[p[:3]])
    assert list(result.kept) == [second] and result.superseded == [first]


def test_the_released_name_wins_over_a_renamed_copy_and_a_tie_is_an_error():
    kept = plan([f"alice_{NB}", "alice_scratch.ipynb"], [NB])
    assert list(kept.kept) == [f"alice_{NB}"] and kept.superseded == ["alice_scratch.ipynb"]
    tie = plan(["alice_a.ipynb", "alice_b.ipynb"], [NB])
    assert len(tie.problems) == 1 and "alice_a.ipynb" in tie.problems[0] \
        and "alice_b.ipynb" in tie.problems[0] and "which is later" in tie.problems[0]


def test_every_unreadable_name_is_named_and_a_second_notebook_needs_its_released_name():
    result = plan(["x/my homework.ipynb", "y/notes.ipynb", "bob_other.ipynb"], ["a.ipynb", "b.ipynb"])
    assert [p.split(":")[0] for p in result.problems] == [
        "bob_other.ipynb", "x/my homework.ipynb", "y/notes.ipynb"]
    assert "none of the assignment's notebooks (a.ipynb, b.ipynb)" in result.problems[0]
    assert not result.kept


def test_a_roster_maps_lms_ids_to_the_course_ids_and_names_who_is_missing(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("lms_id,name,student_id\n12345,Alice Smith,s001\n23456,Bob Jones,s002\n"
                      "31,Carol Diaz,s003\n")
    result = plan([f"smithalice_12345_1_{NB}", f"Bob Jones_23456_assignsubmission_file_{NB}",
                   f"eve_99999_2_{NB}", f"Carol Diaz_777_assignsubmission_file_{NB}"],
                  [NB], read_roster(roster))
    # Moodle's participant ids change from one assignment to the next: its full name maps too
    assert sorted(result.kept.values()) == [("s001", NB), ("s002", NB), ("s003", NB)]
    assert result.problems == [f"eve_99999_2_{NB}: canvas id 99999 is not in the roster"]
    roster.write_text("id,name\n1,A\n")
    with pytest.raises(ValueError, match="lms_id, name, student_id; missing lms_id, student_id"):
        read_roster(roster)


@given(st.dictionaries(st.integers(1, 10 ** 6), st.lists(
    st.tuples(st.integers(1, 10 ** 9), st.integers(0, 3), st.booleans()),
    min_size=1, max_size=4, unique_by=lambda u: (u[0], u[1])), min_size=1, max_size=8))
def test_one_notebook_per_student_the_largest_upload_and_copy_number(uploads):
    paths = {f"x/name_{'LATE_' if late else ''}{user}_{attachment}_03-masking"
             f"{f'-{copy}' if copy else ''}.ipynb": (user, attachment, copy)
             for user, mine in uploads.items() for attachment, copy, late in mine}
    result = plan(list(paths), [NB])
    assert not result.problems
    assert sorted(student for student, _ in result.kept.values()) == sorted(map(str, uploads))
    for path, (student, notebook) in result.kept.items():
        latest = max((a, c) for a, c, _ in uploads[int(student)])
        assert paths[path][1:] == latest and notebook == NB
    assert len(result.kept) + len(result.superseded) == len(paths)
