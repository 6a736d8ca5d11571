"""The leaderboard in a real headless Chromium: open the board, submit a file, see it ranked.

Scores come from the dummy judge (plumbing only). The screenshot is kept in the test's tmp dir and
copied to ../leaderboard_screenshot.png next to the checkout when that folder is writable."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("gradio")
webdriver = pytest.importorskip("selenium.webdriver")

from mmjudge.leaderboard.benchmarks import demo_outputs  # noqa: E402
from mmjudge.leaderboard.settings import DEFAULTS  # noqa: E402
from mmjudge.leaderboard.store import Store  # noqa: E402
from mmjudge.leaderboard.worker import Worker  # noqa: E402

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SCREENSHOT_COPY = Path("/work/leaderboard_screenshot.png")


@pytest.fixture
def browser(tmp_path):
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                 "--window-size=1400,1500"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    from selenium.common.exceptions import WebDriverException

    last = None
    while time.monotonic() < end:
        try:
            value = predicate()
        except WebDriverException as err:  # not rendered yet, or re-rendered under our feet
            value, last = None, err
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"condition not met in time (last error: {last})")


@pytest.mark.slow
def test_submit_in_browser_and_see_it_listed(browser, tmp_path):
    from selenium.webdriver.common.by import By

    from mmjudge.leaderboard.app import build_app, launch
    from mmjudge.leaderboard.demo import seed_demo

    data_dir = tmp_path / "board"
    settings = {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20}
    store = Store(data_dir)
    seed_demo(store)
    worker = Worker(Store(data_dir), settings, progress=False)
    worker.run(once=True)
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    try:
        browser.get(url)
        wait_for(lambda: "demo-vlm-terse" in browser.find_element(By.ID, "models-table").text)

        tab = wait_for(lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, "button[role=tab]") if b.text.strip() == "Submit"])
        tab[0].click()
        name = '<b>browser-vlm</b>'
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#submit-name input, #submit-name textarea")).send_keys(name)
        browser.find_element(By.CSS_SELECTOR, "#submit-who input, #submit-who textarea").send_keys("selenium")
        upload = tmp_path / "outputs.jsonl"
        upload.write_text("".join(json.dumps({**r, "text": r["text"] + " Seen in a browser."}) + "\n"
                                  for r in demo_outputs(0)), encoding="utf-8")  # fmt: skip
        browser.find_element(By.CSS_SELECTOR, "#submit-file input[type=file]").send_keys(str(upload))
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#submit-file [aria-label='outputs.jsonl']"))  # uploaded
        browser.find_element(By.ID, "submit-button").click()
        result = wait_for(lambda: browser.find_element(By.ID, "submit-result").text)
        assert "received: submission" in result, result

        assert worker.run(once=True) == 1
        [b for b in browser.find_elements(By.CSS_SELECTOR, "button[role=tab]") if b.text.strip() == "Models"][0].click()
        wait_for(lambda: [b for b in browser.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Refresh" and b.is_displayed()])[0].click()
        table = wait_for(lambda: browser.find_element(By.ID, "models-table").text if name in browser.find_element(By.ID, "models-table").text else "")
        assert "demo-vlm-plain" in table
        assert not browser.find_elements(By.CSS_SELECTOR, "#models-table b")  # the name is text, not markup
        time.sleep(4.0)  # let the plot draw
        shot = tmp_path / "leaderboard.png"
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        if SCREENSHOT_COPY.parent.is_dir() and os.access(SCREENSHOT_COPY.parent, os.W_OK):
            shutil.copy(shot, SCREENSHOT_COPY)
    finally:
        demo.close()
