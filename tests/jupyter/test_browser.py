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

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import pytest

from helpers import free_port, http_status, solve_exercise

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
SCREENSHOTS = Path(os.environ.get("COURSE_SCREENSHOT_DIR", ROOT / "browser-screenshots"))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM and CHROMEDRIVER),
        reason="needs Debian's chromium and chromium-driver (.ci/run installs them)",
    ),
    pytest.mark.skipif(
        not (ROOT / ".venv" / ".course-install-stamp").exists(),
        reason="runs where ./course.sh has installed .venv",
    ),
]
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium comes with the 'test' extra")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


class Lab:
    """One `course.sh lab|instructor` server in ``folder``, with its URL and token."""

    def __init__(self, folder: Path, mode: str, tmp: Path):
        self.port = free_port()
        self.log = tmp / f"{mode}.log"
        env = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(tmp / f"runtime-{mode}"),
            "JUPYTERLAB_SETTINGS_DIR": str(tmp / f"settings-{mode}"),
            "JUPYTERLAB_WORKSPACES_DIR": str(tmp / f"workspaces-{mode}"),
            "JUPYTER_CONFIG_DIR": str(tmp / f"config-{mode}"),
            "NUMBA_ENABLE_CUDASIM": "1",
        }
        # Every cell in the page (no windowing), so the test sees every prompt and output.
        tracker = (
            tmp
            / f"settings-{mode}"
            / "@jupyterlab"
            / "notebook-extension"
            / "tracker.jupyterlab-settings"
        )
        tracker.parent.mkdir(parents=True, exist_ok=True)
        tracker.write_text('{"windowingMode": "none"}')
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [str(folder / "course.sh"), mode, "--no-browser", f"--ServerApp.port={self.port}"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                cwd=folder,
            )
        deadline, self.token = time.monotonic() + 120, None
        while time.monotonic() < deadline and self.token is None:
            assert self.proc.poll() is None, f"JupyterLab exited early:\n{self.log.read_text()}"
            match = re.search(
                rf":{self.port}/lab/tree/course/README\.md\?token=([0-9a-f]+)", self.log.read_text()
            )
            self.token = match.group(1) if match else None
            time.sleep(0.5)
        assert self.token, f"no URL with a token:\n{self.log.read_text()}"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(timeout=30)


def _chromium(tmp: Path):
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # never let selenium download a browser or driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [
        "--no-sandbox",
        "--headless",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp / 'chromium'}",
    ]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


@contextlib.contextmanager
def step(driver, name: str):
    """Run one step; on failure keep a screenshot and the page's text for the report."""
    try:
        yield
    except BaseException:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))
        (SCREENSHOTS / f"{name}.txt").write_text(driver.find_element(By.TAG_NAME, "body").text)
        raise


def _wait(driver, seconds: float = 60) -> WebDriverWait:
    return WebDriverWait(driver, seconds, poll_frequency=0.25)


def _menu(driver, menu: str, entry: str) -> None:
    """Click a main-menu entry by its label (e.g. Run -> Run All Cells)."""
    items = driver.find_elements(By.CSS_SELECTOR, "#jp-MainMenu .lm-MenuBar-item")
    next(i for i in items if i.text.strip() == menu).click()
    xpath = (
        '//li[contains(@class, "lm-Menu-item")]'
        f'[.//div[contains(@class, "lm-Menu-itemLabel")][normalize-space()="{entry}"]]'
    )
    _wait(driver, 10).until(EC.element_to_be_clickable((By.XPATH, xpath))).click()


def _menu_labels(driver) -> list[str]:
    _wait(driver).until(
        EC.presence_of_element_located((By.CSS_SELECTOR, "#jp-MainMenu .lm-MenuBar-item"))
    )
    return [
        i.text.strip()
        for i in driver.find_elements(By.CSS_SELECTOR, "#jp-MainMenu .lm-MenuBar-item")
    ]


def _open_notebook(driver, lab: Lab, path: str):
    # `reset` starts from an empty layout: a notebook restored from the previous page
    # (still visible for a moment) must not be taken for this one.
    driver.get(lab.url(f"lab/tree/{path}") + "&reset")
    panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"
    name = Path(path).name
    _wait(driver, 90).until(
        lambda d: any(
            name in t.text
            for t in d.find_elements(By.CSS_SELECTOR, ".lm-TabBar-tab.lm-mod-current")
        )
    )
    _wait(driver, 90).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, panel)) == 1)
    _wait(driver, 90).until(
        EC.presence_of_element_located((By.CSS_SELECTOR, f"{panel} .jp-Notebook .jp-Cell"))
    )
    _wait(driver, 90).until(
        lambda d: "Idle" in d.find_element(By.CSS_SELECTOR, "#jp-main-statusbar").text
    )
    return driver.find_element(By.CSS_SELECTOR, panel)


def _validate_shown(driver, panel) -> bool:
    """Whether nbgrader's Validate button shows in the notebook's toolbar.

    The course's extension (jupyter/data) hides it on notebooks that are not
    nbgrader assignments as soon as the notebook is loaded, which `_open_notebook`
    waits for; here the toolbar has also drawn its own buttons.
    """
    toolbar_buttons = ".jp-NotebookPanel-toolbar .jp-ToolbarButtonComponent"
    _wait(driver, 30).until(
        lambda _d: any(
            b.is_displayed() for b in panel.find_elements(By.CSS_SELECTOR, toolbar_buttons)
        )
    )
    return any(b.is_displayed() for b in panel.find_elements(By.CSS_SELECTOR, ".validate-button"))


def _validate(driver, panel) -> str:
    """Press Validate; the class of nbgrader's result ('validation-success'/'-failed')."""
    panel.find_element(By.CSS_SELECTOR, ".validate-button").click()
    result = _wait(driver, 240).until(
        EC.presence_of_element_located(
            (By.CSS_SELECTOR, ".jp-Dialog .validation-success, .jp-Dialog .validation-failed")
        )
    )
    outcome = result.get_attribute("class")
    driver.find_element(By.CSS_SELECTOR, ".jp-Dialog .jp-Dialog-button.jp-mod-accept").click()
    _wait(driver, 10).until(EC.invisibility_of_element_located((By.CSS_SELECTOR, ".jp-Dialog")))
    return outcome


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
