"""A real browser (Debian's headless Chromium, driven by selenium) uses both modes of the course.

Student mode, in a freshly built student edition: the course index opens
rendered with links to every chapter; chapter 2 runs through Run All with no
error and has no Validate button; Validate on an exercise fails while it is blank
and succeeds once solved; none of nbgrader's instructor tools are there.
Instructor mode, in a copy of this repository: Validate shows on an assignment's
source, not on a chapter, and the Formgrader lists the assignments. Screenshots
of a failing step go to ``browser-screenshots/`` (or ``$COURSE_SCREENSHOT_DIR``).
"""

from __future__ import annotations

import re
import shutil
import sys
import urllib.parse

import pytest

from helpers import ROOT, http_status, needs_chromium, needs_course_venv, solve_exercise

pytestmark = [
    pytest.mark.slow,
    needs_chromium,
    needs_course_venv,
]

from browser_helpers import (  # noqa: E402 (skips this module without selenium)
    EC,
    By,
    Lab,
    _chromium,
    _menu,
    _menu_labels,
    _open_notebook,
    _validate,
    _validate_shown,
    _wait,
    step,
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    driver = _chromium(tmp_path_factory.mktemp("chromium"))
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def student_lab(tmp_path_factory):
    sys.path.insert(0, str(ROOT / "tools"))
    import build_student_edition

    tmp = tmp_path_factory.mktemp("student")
    edition = build_student_edition.build(tmp / "gpu-course")
    (edition / ".venv").symlink_to(ROOT / ".venv")  # same pyproject and pins: nothing to install
    lab = Lab(edition, "lab", tmp)
    lab.folder = edition
    yield lab
    lab.stop()


def test_student_mode_index_chapter_and_validate(browser, student_lab):
    lab, driver = student_lab, browser
    with step(driver, "1-index"):
        driver.get(lab.url("lab/tree/course/README.md"))
        index = _wait(driver, 90).until(
            EC.presence_of_element_located(
                (By.CSS_SELECTOR, ".jp-MarkdownViewer .jp-RenderedMarkdown h1")
            )
        )
        assert index.is_displayed()  # rendered, not Markdown source in an editor
        links = driver.find_elements(
            By.CSS_SELECTOR, ".jp-MarkdownViewer .jp-RenderedMarkdown a[href]"
        )
        targets = set()
        for a in links:
            href = urllib.parse.unquote(urllib.parse.urlparse(a.get_attribute("href")).path)
            if ".ipynb" in href:
                targets.add(re.sub(r"^.*?/(files|tree)/", "", href))
        chapters = {f"course/{p.name}" for p in (lab.folder / "course").glob("*.ipynb")}
        assert chapters <= targets, (
            f"chapters without a link in the index: {sorted(chapters - targets)}"
        )
        for target in targets:
            assert http_status(lab.url(f"api/contents/{urllib.parse.quote(target)}")) == 200, target
        assert "Nbgrader" not in _menu_labels(driver)  # no instructor menu for students
        assert http_status(lab.url("formgrader")) == 404  # and no Formgrader behind it
        assert "Jupyter news" not in driver.find_element(By.TAG_NAME, "body").text
    with step(driver, "2-chapter-link"):
        chapter2 = next(
            a
            for a in driver.find_elements(By.CSS_SELECTOR, ".jp-RenderedMarkdown a[href]")
            if "02-simt-model.ipynb" in (a.get_attribute("href") or "")
        )
        chapter2.click()
        _wait(driver, 60).until(
            lambda d: any(
                "02-simt-model.ipynb" in t.text
                for t in d.find_elements(By.CSS_SELECTOR, ".lm-TabBar-tab.lm-mod-current")
            )
        )
    with step(driver, "3-run-all"):
        panel = _open_notebook(driver, lab, "course/02-simt-model.ipynb")
        assert not _validate_shown(driver, panel)  # a chapter has no tests to validate
        n_code = len(panel.find_elements(By.CSS_SELECTOR, ".jp-CodeCell"))
        _menu(driver, "Run", "Run All Cells")

        def finished(_d) -> bool:
            prompts = [
                p.text for p in panel.find_elements(By.CSS_SELECTOR, ".jp-CodeCell .jp-InputPrompt")
            ]
            return len([p for p in prompts if re.search(r"\[\d+\]", p)]) == n_code

        _wait(driver, 240).until(finished)
        # JupyterLab shows an exception as a stderr output holding its traceback
        stderr = [
            o.text
            for o in panel.find_elements(
                By.CSS_SELECTOR,
                '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]',
            )
        ]
        errors = [
            t for t in stderr if "Traceback" in t or re.search(r"^\w+Error\b", t, re.MULTILINE)
        ]
        assert not errors, errors[0][-2000:]
        assert (
            len(panel.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output")) >= n_code // 2
        )  # it printed
    exercise = "exercises/simt/simt.ipynb"
    with step(driver, "4-validate-blank"):
        panel = _open_notebook(driver, lab, exercise)
        assert _validate_shown(driver, panel)
        assert "validation-failed" in _validate(driver, panel)
    with step(driver, "5-validate-solved"):
        solve_exercise(lab.folder / exercise, "simt")
        panel = _open_notebook(driver, lab, exercise)  # reopened from disk
        assert "validation-success" in _validate(driver, panel)


def test_instructor_mode_validate_on_assignments_and_the_formgrader(browser, tmp_path):
    instructor = tmp_path / "instructor"
    instructor.mkdir()
    for rel in [
        "course.sh",
        "nbgrader_config.py",
        "pyproject.toml",
        "requirements",
        "jupyter",
        "solutions",
        "course",
    ]:
        if (ROOT / rel).is_dir():  # without what npm leaves after building jupyter/extensions
            shutil.copytree(
                ROOT / rel, instructor / rel, ignore=shutil.ignore_patterns("node_modules")
            )
        else:
            shutil.copy2(ROOT / rel, instructor / rel)
    (instructor / ".venv").symlink_to(ROOT / ".venv")
    lab = Lab(instructor, "instructor", tmp_path)
    try:
        with step(browser, "6-instructor-menu"):
            browser.get(lab.url("lab"))
            assert "Nbgrader" in _menu_labels(browser)
        with step(browser, "7-validate-on-assignments-only"):
            panel = _open_notebook(browser, lab, "solutions/simt/simt.ipynb")
            assert _validate_shown(browser, panel)  # the source of an assignment
            panel = _open_notebook(browser, lab, "course/02-simt-model.ipynb")
            assert not _validate_shown(browser, panel)
        with step(browser, "8-formgrader"):
            browser.get(lab.url("formgrader/manage_assignments"))
            assignments = sorted(p.name for p in (instructor / "solutions").iterdir() if p.is_dir())
            _wait(browser, 60).until(
                lambda d: all(a in d.find_element(By.TAG_NAME, "body").text for a in assignments)
            )
    finally:
        lab.stop()
