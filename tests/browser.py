"""A headless Chromium for tests that open a page (pytest plugin, loaded by ``tests/conftest.py``).

``make browser`` installs it (Debian ``chromium`` + the Playwright Python driver; no browser
download). Without either, the fixtures skip with the reason. The executable is ``$NDVAL_CHROMIUM``,
else ``/usr/bin/chromium``, else the unpacked copy of ``../shared/reference/browser-testing.md``.

Fixtures:

- ``browser``: one Chromium per test session (per xdist worker);
- ``page``: a fresh page whose console errors, page errors and failed requests are collected in
  ``page.problems`` (a list of strings) — a test asserts it is empty when it means "no console errors".

:func:`save_screenshot` writes ``reports/screenshots/<name>.png`` and attaches it to the Allure
report when Allure is active.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ndval.harness import paths

#: launch flags that work on these machines (no sandbox as root; nothing reaching the network).
CHROMIUM_ARGS: tuple[str, ...] = (
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
)


def chromium_executable() -> Path | None:
    """The Chromium to launch, or None when none is installed."""
    candidates = [os.environ.get("NDVAL_CHROMIUM", ""), "/usr/bin/chromium",
                  str(Path(os.environ.get("NDVAL_BROWSER_DIR", Path.home() / ".cache/ndval-chromium"))
                      / "root/usr/lib/chromium/chromium")]
    return next((Path(c) for c in candidates if c and Path(c).is_file() and os.access(c, os.X_OK)), None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium (Playwright); skips with the reason when the driver or browser is absent."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test: the Playwright driver is not installed (run `make browser`)")
    exe = chromium_executable()
    if exe is None:
        pytest.skip("browser test: no Chromium at $NDVAL_CHROMIUM or /usr/bin/chromium (run `make browser`)")
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(exe), args=list(CHROMIUM_ARGS), headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A new page (1400×1000) collecting console errors, page errors and failed requests in ``page.problems``."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    problems: list[str] = []
    pg.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    pg.problems = problems
    try:
        yield pg
    finally:
        context.close()


def save_screenshot(pg: Any, name: str, full_page: bool = True) -> Path:
    """Screenshot to ``reports/screenshots/<name>.png``, attached to Allure when it is recording."""
    out = paths.reports_dir() / "screenshots"
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{name}.png"
    png = pg.screenshot(full_page=full_page)
    tmp = target.with_suffix(".png.tmp")
    tmp.write_bytes(png)
    tmp.replace(target)
    try:
        import allure

        allure.attach(png, name=name, attachment_type=allure.attachment_type.PNG)
    except Exception:  # Allure absent or not recording: the file is enough
        pass
    return target
