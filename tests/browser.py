"""A real browser for the tests of the HTML report: headless Chromium through
selenium, or a clean skip (with the reason) where chromium, chromedriver or
selenium is missing.

Imported as ``browser`` (pytest puts this folder on ``sys.path``, as for
``helpers``). The machine's network may be closed: Chromium is started with
every background service off, so it tries no connection of its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

#: Where Debian's packages (``chromium``, ``chromium-driver``) put them.
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
CHROMEDRIVER = ("chromedriver",)

FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
)


def _which(names: tuple[str, ...]) -> str | None:
    return next((p for n in names if (p := shutil.which(n))), None)


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install selenium)"
    if _which(CHROMIUM) is None:
        return "no chromium on PATH (apt-get install chromium)"
    if _which(CHROMEDRIVER) is None:
        return "no chromedriver on PATH (apt-get install chromium-driver)"
    return None


@contextmanager
def chromium(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium driven by selenium, with a fresh profile; skips the
    test when there is none to drive."""
    why = missing()
    if why is not None:
        pytest.skip(why)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="fastdiff-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = _which(CHROMIUM)  # type: ignore[assignment]
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=_which(CHROMEDRIVER), log_output=os.devnull)
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def severe(driver: Any) -> list[dict[str, Any]]:
    """The console's SEVERE entries since the last call (errors, CSP refusals)."""
    return [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
