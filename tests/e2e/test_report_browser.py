"""The report in a real headless Chromium: images decode, sections exist, no errors, no network.

Skipped where Debian's chromium and chromium-driver are not installed, unless
CRL_REQUIRE_BROWSER=1 (set by .ci/run, which installs them). Saves a full-page screenshot to
results/report_screenshot.png in the repository (CI's artifact).
"""

import json
import os
import shutil
import tempfile

import pytest
from test_report import IDS, plot_jobs

from conftest import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")

if not (CHROMIUM and DRIVER):
    if os.environ.get("CRL_REQUIRE_BROWSER") == "1":
        raise RuntimeError("CRL_REQUIRE_BROWSER=1 but chromium/chromedriver are not installed")
    pytest.skip("Debian's chromium and chromium-driver are not installed", allow_module_level=True)


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="crl-chromium-")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_report_renders_cleanly_offline(smoke_run, smoke_plan, browser):
    page = smoke_run / "results" / "report" / "index.html"
    browser.get(page.as_uri())
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt]);"
    )
    assert len(images) == sum(plot_jobs(smoke_plan).values())  # one figure per plot job
    for complete, width, alt in images:
        assert complete and width > 0, alt
    for ident in IDS:
        assert browser.execute_script(f"return !!document.getElementById('{ident}');"), ident
    rows = browser.execute_script(
        "return document.querySelectorAll('#table1-main tbody tr').length;"
    )
    assert rows == 2  # the smoke config's two D
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
    urls = []
    for entry in browser.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    assert any(u.startswith("file://") for u in urls), "the performance log saw no page load"
    # browser-internal pages (the new-tab page's chrome:// resources) never touch the network
    local = ("file:", "data:", "chrome:", "chrome-extension:", "chrome-untrusted:", "about:")
    network = [u for u in urls if not u.startswith(local)]
    assert network == [], network
    # a full-page screenshot for the reviewer (and CI's artifact)
    height = browser.execute_script("return document.documentElement.scrollHeight;")
    browser.set_window_size(1280, min(int(height) + 50, 16000))
    out = REPO / "results" / "report_screenshot.png"
    out.parent.mkdir(exist_ok=True)
    assert browser.save_screenshot(str(out))
    assert out.stat().st_size > 10_000
