"""Driving JupyterLab in a real browser (Debian's headless Chromium, through selenium).

Shared by the browser test (tests/jupyter/test_browser.py) and the course hub's
(tests/deploy/test_hub.py). Importing this module skips the importing test when
selenium is missing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from helpers import ROOT, free_port

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
SCREENSHOTS = Path(os.environ.get("COURSE_SCREENSHOT_DIR", ROOT / "browser-screenshots"))
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium comes with the 'test' extra")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
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
            # A student edition shares this checkout's .venv: it must never reinstall the
            # package from its throw-away folder into it (later tests would import that copy).
            "COURSE_NO_INSTALL": "1",
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


def _kernel_idle(driver, seconds: float = 90) -> None:
    """Wait until the status bar says the notebook's kernel is idle: started, page settled."""
    _wait(driver, seconds).until(
        lambda d: "Idle" in d.find_element(By.CSS_SELECTOR, "#jp-main-statusbar").text
    )


def _type_into(driver, css: str, text: str) -> None:
    """Click the editor that ``css`` finds and type ``text``, finding it again if
    JupyterLab re-renders it in between (the page settles after the kernel starts)."""

    def typed(d) -> bool:
        editor = EC.element_to_be_clickable((By.CSS_SELECTOR, css))(d)
        if not editor:
            return False
        editor.click()
        editor.send_keys(text)
        return True

    WebDriverWait(
        driver, 90, poll_frequency=0.25, ignored_exceptions=(StaleElementReferenceException,)
    ).until(typed)


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
    _kernel_idle(driver)
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
