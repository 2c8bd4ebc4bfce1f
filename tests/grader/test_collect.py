"""grader.intake.collect: filing downloads under safe student ids, and what it refuses."""

from __future__ import annotations

import stat
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.intake import collect as collect_mod
from grader.intake.collect import collect_all, safe_id, student_and_file


def test_safe_ids() -> None:
    assert safe_id("jürgen") == "jurgen"
    assert safe_id("anna maria") == "anna-maria"
    assert safe_id("O'Brien, Seán") == "o-brien-sean"
    assert safe_id("../..") == "student"


def test_download_names() -> None:
    P = Path
    assert student_and_file(P("smithjohn_12345_67890_simt.ipynb")) == ("smithjohn", "simt.ipynb")
    assert student_and_file(P("smithjohn_LATE_12345_67890_simt-1.ipynb")) == (
        "smithjohn",
        "simt.ipynb",
    )
    assert student_and_file(P("John Smith_12345_assignsubmission_file_/simt.ipynb")) == (
        "John Smith",
        "simt.ipynb",
    )
    assert student_and_file(P("alice/simt.ipynb")) == ("alice", "simt.ipynb")
    assert student_and_file(P("alice_simt.ipynb")) == ("alice", "simt.ipynb")


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, "/etc/passwd")
    return path


def test_collect_files_every_safe_input_and_refuses_the_rest(tmp_path: Path) -> None:
    course = tmp_path / "course"
    course.mkdir()
    inbox = tmp_path / "inbox"
    notebook = nbformat.writes(nbformat.v4.new_notebook()).encode()
    (inbox / "John Smith_12345_assignsubmission_file_").mkdir(parents=True)
    (inbox / "John Smith_12345_assignsubmission_file_" / "simt.ipynb").write_bytes(notebook)
    (inbox / "jürgen_1_2_simt.ipynb").write_bytes(notebook)
    (inbox / "anna maria").mkdir()
    (inbox / "anna maria" / "simt.ipynb").write_bytes(notebook)
    (inbox / "broken_3_4_simt.ipynb").write_bytes(b"{not json")
    (inbox / "old.tar.gz").write_bytes(b"\x1f\x8b")
    _zip(inbox / "evil.zip", {"../escape_simt.ipynb": notebook})
    _zip(inbox / "abs.zip", {"/tmp/abs_simt.ipynb": notebook})
    _zip(inbox / "link.zip", {}, link="linky_simt.ipynb")
    # links in a downloads folder: to a notebook, and to a folder of them, elsewhere
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "eve_7_8_simt.ipynb").write_bytes(notebook)
    (inbox / "sneaky_5_6_simt.ipynb").symlink_to(tmp_path / "elsewhere" / "eve_7_8_simt.ipynb")
    (inbox / "linked-folder").symlink_to(tmp_path / "elsewhere")
    good_zip = _zip(tmp_path / "class.zip", {"bob_simt.ipynb": notebook})
    report = collect_all(course, "simt", [inbox, good_zip, tmp_path / "missing.zip"])
    filed = {p.parent.parent.name for p in (course / "submitted").glob("*/simt/*.ipynb")}
    assert filed == {"john-smith", "jurgen", "anna-maria", "bob"}
    assert report.renamed == {
        "John Smith": "john-smith",
        "jürgen": "jurgen",
        "anna maria": "anna-maria",
    }
    refused = "\n".join(report.refused)
    for word in ("evil.zip", "abs.zip", "link.zip", "old.tar.gz", "broken", "missing.zip") + (
        "sneaky_5_6_simt.ipynb: a symbolic link",
        "linked-folder: a symbolic link",
    ):
        assert word in refused, refused
    assert not (tmp_path / "escape_simt.ipynb").exists()
    assert not list(course.glob("submitted/*/*/..*"))
    assert "jürgen,jurgen" in (course / "submitted" / "student-ids.csv").read_text()
    assert "refused" in report.text() and "'anna-maria'" in report.text()


def _nb(code: str = "x = 1") -> bytes:
    return nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    ).encode()


def _encrypt_flag(path: Path, member: str) -> Path:
    """Set the 'encrypted' flag (bit 0x1) of *member* in its local and central headers."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for signature, flags_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = data.find(signature)
        while data[start + name_at : start + name_at + len(name)] != name:
            start = data.find(signature, start + 1)
        data[start + flags_at] |= 0x1
    path.write_bytes(bytes(data))
    return path


def test_collect_reports_every_file_it_does_not_file_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    course = tmp_path / "course"
    members = {
        "alice_simt.ipynb": _nb("secret = 1"),
        "carol_simt.ipynb": _nb(),
        "dave_simt.ipynb": _nb("dave = 1"),
        "erin_helper.py": b"print(1)",
        ".DS_Store": b"\0",
        "__MACOSX/._carol_simt.ipynb": b"\0",
    }
    locked = _encrypt_flag(_zip(tmp_path / "locked.zip", members), "alice_simt.ipynb")
    locked.write_bytes(locked.read_bytes().replace(b"dave = 1", b"dave = 2"))  # bad CRC-32
    inbox = tmp_path / "inbox"
    (inbox / "frank").mkdir(parents=True)
    (inbox / "frank" / "simt.ipynb.txt").write_bytes(_nb())
    (inbox / "frank" / "simt.py").write_text("x = 1")
    (inbox / "frank" / "report.pdf").write_bytes(b"%PDF")
    (inbox / "frank" / ".DS_Store").write_bytes(b"\0")
    (inbox / "aaron_simt.ipynb").write_bytes(_nb("boom = 1"))  # before frank/
    later = _zip(tmp_path / "later.zip", {"bob_simt.ipynb": _nb()})
    real_is_notebook = collect_mod._is_notebook

    def failing(content: bytes) -> bool:
        if b"boom" in content:
            raise OSError("disk on fire")
        return real_is_notebook(content)

    monkeypatch.setattr(collect_mod, "_is_notebook", failing)
    report = collect_all(course, "simt", [locked, inbox, later])
    filed = {p.parent.parent.name for p in (course / "submitted").glob("*/simt/simt.ipynb")}
    assert filed == {"carol", "frank", "bob"}, report.text()
    lines = {line.split(": ", 1)[0]: line for line in report.refused}
    assert "encrypted" in lines[f"alice_simt.ipynb in {locked}"]
    assert "corrupt member" in lines[f"dave_simt.ipynb in {locked}"]
    assert "a Python script, not a notebook" in lines[f"erin_helper.py in {locked}"]
    assert "a Python script, not a notebook" in lines[str(inbox / "frank" / "simt.py")]
    assert "not a notebook (.pdf file)" in lines[str(inbox / "frank" / "report.pdf")]
    assert "disk on fire" in lines[str(inbox / "aaron_simt.ipynb")]
    assert len(report.refused) == 6, report.text()  # no line for the macOS noise
    assert report.notes == [
        f"{inbox / 'frank' / 'simt.ipynb.txt'}: a notebook uploaded as .txt, filed as simt.ipynb"
    ]
    assert "bob,bob" in (course / "submitted" / "student-ids.csv").read_text()

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(collect_mod, "_winner", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collect_all(course, "simt", [_zip(tmp_path / "new.zip", {"hal_simt.ipynb": _nb()})])
    assert "hal,hal" in (course / "submitted" / "student-ids.csv").read_text()


@pytest.mark.parametrize("keep, smith", [("latest", "late = 1"), ("on-time", "on_time = 1")])
def test_collect_keeps_one_of_two_notebooks_by_the_stated_rule(
    tmp_path: Path, keep: str, smith: str
) -> None:
    course = tmp_path / "course"
    downloads = _zip(
        tmp_path / "canvas.zip",
        {
            "smithjohn_LATE_12345_67890_simt.ipynb": _nb("late = 1"),
            "smithjohn_12345_67890_simt.ipynb": _nb("on_time = 1"),
            "amy_LATE_1_2_simt-2.ipynb": _nb("second = 1"),
            "amy_LATE_1_2_simt-1.ipynb": _nb("first = 1"),
        },
    )
    (tmp_path / "a" / "zoe").mkdir(parents=True)
    (tmp_path / "a" / "zoe" / "simt.ipynb").write_bytes(_nb("earlier = 1"))
    (tmp_path / "b" / "zoe").mkdir(parents=True)
    (tmp_path / "b" / "zoe" / "simt.ipynb").write_bytes(_nb("later = 1"))
    report = collect_all(course, "simt", [downloads, tmp_path / "a", tmp_path / "b"], keep=keep)

    def filed(student: str) -> str:
        return (course / "submitted" / student / "simt" / "simt.ipynb").read_text()

    assert smith in filed("smithjohn")
    assert "second = 1" in filed("amy")  # the higher resubmission number, under both rules
    assert "later = 1" in filed("zoe")  # otherwise the later input
    assert len(report.duplicates) == 3 and not report.refused, report.text()
    assert all(f"--keep {keep}:" in line for line in report.duplicates)
    smith_line = next(line for line in report.duplicates if line.startswith("smithjohn/"))
    kept = "smithjohn_LATE_" if keep == "latest" else "smithjohn_1"
    assert smith_line.startswith(f"smithjohn/simt.ipynb: kept {kept}"), smith_line
    assert "not filed: smithjohn_" in smith_line


def test_collect_replaces_an_earlier_runs_notebook_only_as_the_rule_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from grader.__main__ import main

    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("")
    on_time = _zip(tmp_path / "on-time.zip", {"smith_1_2_simt.ipynb": _nb("on_time = 1")})
    late = _zip(tmp_path / "late.zip", {"smith_LATE_1_2_simt.ipynb": _nb("late = 1")})
    target = course / "submitted" / "smith" / "simt" / "simt.ipynb"
    assert not collect_all(course, "simt", [on_time]).duplicates

    assert main(["--course", str(course), "collect", "simt", str(late), "--keep", "on-time"]) == 0
    out = capsys.readouterr().out
    assert "kept the submission filed before (from smith_1_2_simt.ipynb in" in out, out
    assert "--keep on-time:" in out and "on_time = 1" in target.read_text()

    assert main(["--course", str(course), "collect", "simt", str(late)]) == 0
    out = capsys.readouterr().out
    assert "smith_LATE_1_2_simt.ipynb in" in out and "replaced the submission filed before" in out
    assert "--keep latest:" in out and "late = 1" in target.read_text()

    # The LATE file is recorded as LATE: under on-time, the on-time one replaces it again;
    # the same file once more is no duplicate.
    report = collect_all(course, "simt", [on_time], keep="on-time")
    assert "replaced the submission filed before" in report.duplicates[0]
    assert "on_time = 1" in target.read_text()
    assert not collect_all(course, "simt", [on_time]).duplicates


def test_a_zip_one_student_uploaded_to_canvas_is_filed_as_theirs(tmp_path: Path) -> None:
    """Canvas renames a student's upload ``name_123_456_<file>.zip``; its notebooks are that
    student's, at the top of the zip or in a folder of it, and a LATE mark carries over."""
    course = tmp_path / "course"
    notebook = _nb()
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    _zip(inbox / "carol_123_456_simt.zip", {"simt.ipynb": notebook})
    _zip(inbox / "dave_LATE_7_8_work.zip", {"simt/simt.ipynb": notebook, "__MACOSX/._x": b""})
    report = collect_all(course, "simt", [inbox])
    filed = {p.parent.parent.name for p in (course / "submitted").glob("*/simt/simt.ipynb")}
    assert filed == {"carol", "dave"}, report.text()
    assert not report.refused
    log = (course / "submitted" / "collected.csv").read_text().splitlines()
    header = log[0].split(",")
    late = {
        row.split(",")[0].split("/")[0]: row.split(",")[header.index("late")] for row in log[1:]
    }
    assert late["dave"] != late["carol"], log  # the zip's LATE mark is the notebook's
