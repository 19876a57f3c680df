"""Open a report in a real headless browser: JavaScript errors, plots rendered, screenshot.

Owns the check that a generated page works, not just that it was written: playwright
(imported lazily; a dev dependency) drives the system's chromium (env RLSIM_CHROMIUM, else
/usr/bin/chromium; never a downloaded browser). The flags keep chromium from reaching for
the network, which hangs on a machine without one.

    python -m rlsim.report.browser REPORT.html OUT.png   # exit 1 on errors or blank plots
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rlsim.report.page import PLOT_CLASS

DEFAULT_CHROMIUM = "/usr/bin/chromium"

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]

RENDER_TIMEOUT_MS = 60_000


@dataclass
class PageCheck:
    """What the browser saw. `ok` when nothing failed and every plot rendered."""

    js_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    plots_expected: int = 0
    plots_rendered: int = 0

    @property
    def ok(self) -> bool:
        return (not self.js_errors and not self.console_errors
                and self.plots_rendered == self.plots_expected)

    def text(self) -> str:
        lines = [f"plots rendered: {self.plots_rendered}/{self.plots_expected}",
                 f"javascript errors: {len(self.js_errors)}",
                 f"console errors: {len(self.console_errors)}"]
        lines += [f"  js: {e}" for e in self.js_errors]
        lines += [f"  console: {e}" for e in self.console_errors]
        return "\n".join(lines)


def chromium_path() -> str:
    return os.environ.get("RLSIM_CHROMIUM") or DEFAULT_CHROMIUM


def browser_missing() -> str | None:
    """Why the check cannot run here, or None when it can."""
    path = chromium_path()
    if not Path(path).is_file():
        return (f"chromium not found at {path}: apt-get install chromium (.ci/run does this) "
                "or set RLSIM_CHROMIUM")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed: pip install -e '.[dev]'"
    return None


def check_page(html: Path, screenshot: Path | None = None, width: int = 1400) -> PageCheck:
    """Load `html` from disk, wait until every plot div has rendered (or the timeout), and
    optionally write a full-page PNG screenshot."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    check = PageCheck()
    selector = f"div.{PLOT_CLASS}"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.on("pageerror", lambda err: check.js_errors.append(str(err)))
            page.on("console", lambda msg: check.console_errors.append(msg.text)
                    if msg.type == "error" else None)
            page.goto(Path(html).resolve().as_uri(), wait_until="load",
                      timeout=RENDER_TIMEOUT_MS)
            check.plots_expected = page.locator(selector).count()
            # A timeout is not an error here: the unrendered plots counted below are the
            # finding.
            with contextlib.suppress(PlaywrightError):
                page.wait_for_function(
                    "sel => Array.from(document.querySelectorAll(sel))"
                    ".every(el => el.querySelector('.main-svg'))",
                    arg=selector, timeout=RENDER_TIMEOUT_MS)
            check.plots_rendered = int(page.evaluate(
                "sel => Array.from(document.querySelectorAll(sel))"
                ".filter(el => el.querySelector('.main-svg')).length", selector))
            if screenshot is not None:
                page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return check


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        print("usage: python -m rlsim.report.browser REPORT.html [OUT.png]", file=sys.stderr)
        return 2
    missing = browser_missing()
    if missing:
        print(f"rlsim: error: {missing}", file=sys.stderr)
        return 2
    shot = Path(args[1]) if len(args) == 2 else None
    check = check_page(Path(args[0]), shot)
    print(check.text())
    if shot is not None:
        print(f"screenshot: {shot}")
    return 0 if check.ok else 1


if __name__ == "__main__":
    sys.exit(main())
