"""Real headless Chromium (Debian's package) driven by Playwright, against pytest-django's live server.

Browser tests are marked ``browser``. Without /usr/bin/chromium they skip locally and fail with CI=true
(.ci/run installs the package).
"""

import os
import shutil
import threading
import time

import pytest
from django.core.signals import request_finished, request_started

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make around it are
# ordinary synchronous calls, so Django's async-safety check does not apply to them.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def chromium():
    if not shutil.which(CHROMIUM) and not os.path.exists(CHROMIUM):
        message = f"needs Chromium at {CHROMIUM} (Debian package 'chromium'; .ci/run installs it)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


class BrowserConsole:
    """What the pages of the watched browser contexts report: console messages and CSP violations.

    A ``securitypolicyviolation`` listener is installed in every document before its own scripts run
    (an init script, which CSP does not govern) and reports through an exposed binding, so a violation
    is seen whichever page, frame or navigation it happens in. Chromium also writes every violation to
    the console ("... violates the following Content Security Policy directive ..."),
    which catches the ones a page without JavaScript cannot report.
    """

    def __init__(self):
        self.messages: list[str] = []
        self.violations: list[dict] = []
        self.pages: list = []

    def watch(self, context):
        context.expose_binding("__yardstickCspViolation", self._violation)
        context.add_init_script(
            """document.addEventListener("securitypolicyviolation", (event) => {
                window.__yardstickCspViolation({
                    directive: event.effectiveDirective,
                    blocked: event.blockedURI,
                    source: event.sourceFile,
                    line: event.lineNumber,
                    sample: event.sample,
                });
            });"""
        )
        context.on("page", self._page)
        return context

    def _page(self, page):
        self.pages.append(page)
        page.on(
            "console", lambda message: self.messages.append(f"{message.type}: {message.text} ({page.url})")
        )

    def _violation(self, source, report):
        self.violations.append({**report, "page": source["page"].url})

    def csp_problems(self) -> list[str]:
        for page in self.pages:
            if not page.is_closed():
                try:
                    page.evaluate("0")  # a round trip: reports already sent by the page arrive first
                except Exception:  # a page without JavaScript, or one navigating: the console still speaks
                    pass
        reports = [
            f"{v['directive']} blocked {v['blocked'] or 'inline'} on {v['page']} ({v['source']}:{v['line']})"
            for v in self.violations
        ]
        return reports + [message for message in self.messages if "Content Security Policy" in message]


@pytest.fixture
def browser_console():
    """Console messages and CSP violations of the test's pages; a test with a CSP violation fails."""
    return BrowserConsole()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Fails a browser test whose pages violated the Content-Security-Policy, after its own checks."""
    result = yield
    console = item.funcargs.get("browser_console")
    if console is not None:
        problems = console.csp_problems()
        if problems:
            pytest.fail("Content-Security-Policy violations:\n" + "\n".join(problems), pytrace=False)
    return result


class ServedRequests:
    """The requests the live server is serving, counted from Django's request signals (its threads), and
    how many lease releases (``/s/<slug>/release/``) it has served."""

    def __init__(self):
        self.lock = threading.Lock()
        self.serving = 0
        self.releases = 0
        self.last_change = time.monotonic()

    def started(self, environ=None, **kwargs):
        with self.lock:
            self.serving += 1
            self.releases += (environ or {}).get("PATH_INFO", "").endswith("/release/")
            self.last_change = time.monotonic()

    def finished(self, **kwargs):
        with self.lock:
            self.serving -= 1
            self.last_change = time.monotonic()

    def wait(self, *, releases: int, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Until ``releases`` releases have arrived and nothing has been served for ``quiet`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if (
                    self.releases >= releases
                    and self.serving <= 0
                    and time.monotonic() - self.last_change >= quiet
                ):
                    return
            time.sleep(0.02)


# A voting page whose vote.js runs and has no vote on its way sends a release when it is left.
SENDS_A_RELEASE_JS = """() => {
    const form = document.getElementById("vote-form");
    const keys = document.getElementById("vote-keys");
    return Boolean(form && form.dataset.release && keys && !keys.hidden && form.getAttribute("aria-busy") !== "true");
}"""


@pytest.fixture
def new_context(chromium, browser_console):
    """A factory of browser contexts whose pages ``browser_console`` watches; closed after the test.

    Before the contexts close, their pages are left for a blank page and the live server is let finish
    what leaving sends (the voting page's beacon that gives its comparison back, which the browser
    sends on its own, unseen by Playwright): a request still served while the test's database is
    flushed fails the teardown."""
    contexts = []
    served = ServedRequests()
    request_started.connect(served.started, dispatch_uid="browser-tests-served")
    request_finished.connect(served.finished, dispatch_uid="browser-tests-served")

    def make(**options):
        context = browser_console.watch(chromium.new_context(**options))
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context

    yield make
    expected = served.releases
    for context in contexts:
        for page in context.pages:
            try:
                expected += bool(page.evaluate(SENDS_A_RELEASE_JS))
            except Exception:  # a page without JavaScript, or mid-navigation: it sends nothing we wait for
                pass
            page.goto("about:blank")
    served.wait(releases=expected)
    for context in contexts:
        context.close()
    request_started.disconnect(dispatch_uid="browser-tests-served")
    request_finished.disconnect(dispatch_uid="browser-tests-served")


@pytest.fixture
def page(new_context):
    return new_context(viewport={"width": 1100, "height": 800}).new_page()


@pytest.fixture
def phone_page(new_context):
    return new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True).new_page()
