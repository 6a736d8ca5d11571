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

SCREENSHOT_COPY = Path("/work/leaderboard_screenshot.png")


@pytest.fixture
def browser(chromium, tmp_path):  # a fresh browser per test (conftest.py's chromium)
    with chromium(tmp_path / "profile", "1400,1500") as driver:
        yield driver


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


def demo_board(tmp_path, **overrides):
    """The demo board with its seeded submissions scored, served on a free port: (data dir, settings,
    worker, app, url)."""
    from mmjudge.leaderboard.app import build_app, launch
    from mmjudge.leaderboard.demo import seed_demo

    data_dir = tmp_path / "board"
    settings = {**DEFAULTS, "demo": True, "judge": "dummy", **overrides}
    seed_demo(Store(data_dir))
    worker = Worker(Store(data_dir), settings, progress=False)
    worker.run(once=True)
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    return data_dir, settings, worker, demo, url


@pytest.mark.slow
def test_submit_in_browser_and_see_it_listed(browser, tmp_path):
    from selenium.webdriver.common.by import By

    data_dir, settings, worker, demo, url = demo_board(tmp_path, bootstrap=20)
    try:
        browser.get(url)
        wait_for(lambda: "demo-vlm-terse" in browser.find_element(By.ID, "models-table").text)

        tab(browser, "Submit")
        name = "<b>browser-vlm</b>"
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#submit-name input, #submit-name textarea")).send_keys(
            name
        )
        browser.find_element(By.CSS_SELECTOR, "#submit-who input, #submit-who textarea").send_keys("selenium")
        upload = tmp_path / "outputs.jsonl"
        upload.write_text(
            "".join(json.dumps({**r, "text": r["text"] + " Seen in a browser."}) + "\n" for r in demo_outputs(0)),
            encoding="utf-8",
        )
        browser.find_element(By.CSS_SELECTOR, "#submit-file input[type=file]").send_keys(str(upload))
        wait_for(
            lambda: browser.find_elements(By.CSS_SELECTOR, "#submit-file [aria-label='outputs.jsonl']")
        )  # uploaded
        browser.find_element(By.ID, "submit-button").click()
        result = wait_for(lambda: browser.find_element(By.ID, "submit-result").text)
        assert "received: submission" in result, result

        assert worker.run(once=True) == 1
        [b for b in browser.find_elements(By.CSS_SELECTOR, "button[role=tab]") if b.text.strip() == "Models"][0].click()
        wait_for(
            lambda: [
                b
                for b in browser.find_elements(By.TAG_NAME, "button")
                if b.text.strip() == "Refresh" and b.is_displayed()
            ]
        )[0].click()
        table = wait_for(
            lambda: (
                browser.find_element(By.ID, "models-table").text
                if name in browser.find_element(By.ID, "models-table").text
                else ""
            )
        )
        assert "demo-vlm-plain" in table
        assert not browser.find_elements(By.CSS_SELECTOR, "#models-table b")  # the name is text, not markup
        # The Arena tab comes from its track's declaration: the demo's arena entries ranked by strength.
        tab(browser, "Arena")
        arena = wait_for(lambda: "demo-vlm-wordy" in browser.find_element(By.ID, "arena-table").text)
        arena = browser.find_element(By.ID, "arena-table").text
        assert "strength" in arena and "win_rate" in arena and "interval" in arena, arena
        assert "anchor-clear" in browser.find_element(By.ID, "arena-caption").text
        # The Judges tab, also from its declaration: the demo's judges ranked by accuracy on the demo pairs, the
        # reported card apart (its own signature group).
        tab(browser, "Judges")
        wait_for(lambda: "demo-judge-careful" in browser.find_element(By.ID, "judges-table").text)
        judges = browser.find_element(By.ID, "judges-table").text
        assert "accuracy" in judges and "interval" in judges and "demo-judge-first-slot" in judges, judges
        assert "demo-judge-reported" not in judges and "0.875" in judges
        assert "Scored by the board" in browser.find_element(By.ID, "judges-caption").text
        tab(browser, "Models")
        time.sleep(4.0)  # let the plot draw
        shot = tmp_path / "leaderboard.png"
        browser.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        if SCREENSHOT_COPY.parent.is_dir() and os.access(SCREENSHOT_COPY.parent, os.W_OK):
            shutil.copy(shot, SCREENSHOT_COPY)
    finally:
        demo.close()


SHOTS = Path(os.environ.get("MMJUDGE_BOARD_SHOTS", "/tmp/mmjudge-board-shots"))


def shoot(browser, tmp_path, name):
    """Keep a screenshot (in the test's tmp dir, and in SHOTS when writable) for the record."""
    path = tmp_path / f"{name}.png"
    browser.save_screenshot(str(path))
    try:
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, SHOTS / path.name)
    except OSError:
        pass
    return path


def tab(browser, label):
    from selenium.webdriver.common.by import By

    wait_for(
        lambda: [b for b in browser.find_elements(By.CSS_SELECTOR, "button[role=tab]") if b.text.strip() == label]
    )[0].click()


@pytest.mark.slow
def test_a_builder_downloads_inputs_submits_and_sees_the_ranked_row_with_its_interval(browser, tmp_path):
    """What a model builder does in the page: open *How to take part*, download the inputs zip, build a
    submission from it (the "model" answers from the inputs), submit it on *Submit*, and find it ranked
    on *Models* with its interval; a payload name is shown as text."""
    import re
    import zipfile

    from selenium.webdriver.common.by import By

    data_dir, settings, worker, demo, url = demo_board(tmp_path, bootstrap=200, explain_examples=0)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        browser.get(url)
        wait_for(lambda: "demo-vlm-terse" in browser.find_element(By.ID, "models-table").text)
        tab(browser, "How to take part")
        guide = " ".join(wait_for(lambda: browser.find_element(By.ID, "take-part-guide").text).split())
        assert "How to take part in demo-inputs (models track)" in guide and '{"id": "demo-ic-1", "text":' in guide
        assert (
            f"mmjudge leaderboard submit --url {url.rstrip('/')} --benchmark demo-inputs" in guide
        )  # the board's own address
        shoot(browser, tmp_path, "1-how-to-take-part")
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#inputs-zip button, button#inputs-zip").is_enabled())
        browser.find_element(By.CSS_SELECTOR, "#inputs-zip button, button#inputs-zip").click()
        zipped = wait_for(lambda: [p for p in downloads.glob("*.zip") if not p.name.endswith(".crdownload")])[0]
        time.sleep(0.5)
        with zipfile.ZipFile(zipped) as zf:
            items = [json.loads(line) for line in zf.read("demo-inputs/inputs.jsonl").decode().splitlines()]
            assert all(zf.read(f"demo-inputs/{it['image']}").startswith(b"\x89PNG") for it in items)
        outputs = tmp_path / "my-outputs.jsonl"
        outputs.write_text(
            "".join(
                json.dumps({"id": it["id"], "text": f"A shape ({it['task']}); {it['question'] or 'no question'}."})
                + "\n"
                for it in items
            ),
            encoding="utf-8",
        )

        tab(browser, "Submit")
        name = "[Session expired: click here](https://evil.example/)"
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#submit-name input, #submit-name textarea")).send_keys(
            name
        )
        browser.find_element(By.CSS_SELECTOR, "#submit-file input[type=file]").send_keys(str(outputs))
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#submit-file [aria-label='my-outputs.jsonl']"))
        browser.find_element(By.ID, "submit-button").click()
        result = wait_for(lambda: browser.find_element(By.ID, "submit-result").text)
        assert "received: submission" in result, result
        shoot(browser, tmp_path, "2-submitted")
        sid = re.search(r"[0-9a-f]{32}", result).group(0)

        assert worker.run(once=True) == 1
        tab(browser, "Models")
        wait_for(
            lambda: [
                b
                for b in browser.find_elements(By.TAG_NAME, "button")
                if b.text.strip() == "Refresh" and b.is_displayed()
            ]
        )[0].click()
        table = wait_for(
            lambda: (
                browser.find_element(By.ID, "models-table").text
                if "Session expired" in browser.find_element(By.ID, "models-table").text
                else ""
            )
        )
        assert "interval" in table and "vs above" in table and "judge failures" in table
        assert re.search(r"\[\d\.\d{3}, \d\.\d{3}\]", table), table
        assert not browser.find_elements(By.CSS_SELECTOR, "a[href^='https://evil']")  # the name is text, never a link
        caption = browser.find_element(By.ID, "models-caption").text
        assert "95% bootstrap" in caption and "Session expired" in caption
        time.sleep(3.0)  # let the plot draw
        shot = shoot(browser, tmp_path, "3-ranked")
        assert shot.stat().st_size > 10_000
        # The table as a file: the CSV download holds the numbers behind the interval and "vs above".
        browser.find_element(By.CSS_SELECTOR, "#models-csv button, button#models-csv").click()
        csv_file = wait_for(lambda: list(downloads.glob("*.csv")))[0]
        time.sleep(0.5)
        import pandas as pd

        results = pd.read_csv(csv_file)
        assert {"rank", "name", "overall", "ci_low", "ci_high", "separable", "failed", "signature"} <= set(
            results.columns
        )
        assert results.loc[results["id"] == sid, "name"].item() == name
        standing = __import__("mmjudge.leaderboard.views", fromlist=["standing"]).standing(
            Store(data_dir), sid, settings
        )
        assert standing["status"] == "DONE" and standing["ci_low"] < standing["value"] < standing["ci_high"]
        assert (
            f"[{standing['ci_low']:.3f}, {standing['ci_high']:.3f}]" in table
        )  # its own interval, as the page shows it
    finally:
        demo.close()


def _columns_fit(browser, table_id: str) -> dict:
    """Whether a table's columns fit its viewport (no sideways scrolling), and each header's right edge."""
    return browser.execute_script(
        """
        const table = document.getElementById(arguments[0]);
        const viewport = table.querySelector('.virtual-table-viewport') || table.querySelector('table').parentElement;
        const right = viewport.getBoundingClientRect().right;
        const heads = {};
        table.querySelectorAll('th').forEach(th => { heads[th.innerText.trim()] = th.getBoundingClientRect().right; });
        return {scroll: viewport.scrollWidth, client: viewport.clientWidth, right: right, heads: heads};
        """,
        table_id,
    )


def _listen(browser) -> None:
    """Record everything the page's live regions (read out by screen readers; visually hidden) say: an
    announcement lasts a moment, so it is collected as it happens."""
    browser.execute_script(
        """
        window.__announced = [];
        const keep = (text) => { if ((text || '').trim()) window.__announced.push(text.trim()); };
        new MutationObserver((mutations) => mutations.forEach((m) => {
            if (m.type === 'characterData') {  // the text node may be gone by now: read the node itself
                const parent = m.target.parentElement;
                if (!parent || parent.closest('[aria-live]')) keep(m.target.data);
            } else if (m.target.closest && m.target.closest('[aria-live]')) {
                m.addedNodes.forEach((n) => keep(n.textContent));
            }
        })).observe(document.body, {subtree: true, childList: true, characterData: true});
        // The same text set twice is no mutation: also look every 50 ms.
        setInterval(() => document.querySelectorAll('[aria-live]').forEach((e) => keep(e.textContent)), 50);
        """
    )


def _announced(browser) -> list[str]:
    return browser.execute_script("return window.__announced || [];")


def _legend(browser) -> list[str]:
    from selenium.webdriver.common.by import By

    return sorted({line for line in browser.find_element(By.ID, "models-plot").text.split() if line.startswith("#")})


@pytest.mark.slow
def test_a_builders_path_without_friction(browser, tmp_path):
    """Issue 29.9 in a real Chromium, as a model builder met it: the upload limits and their wording agree
    on the page, in the guide, in the zip's README and in the browser's own pop-up; the reply to an
    upload links to its page and follows it to DONE, and the Models table shows it, without a click on
    Refresh; no "common.complete"; the plot's legend lists only the rows that exist; note, submitter and
    id are visible without scrolling sideways; the zip's files unpack as mode 0644."""
    import re
    import threading
    import zipfile

    from selenium.webdriver.common.by import By

    data_dir, settings, worker, demo, url = demo_board(tmp_path, bootstrap=20, rate_limit=50, explain_examples=0)
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    limit_words = ("at most 4.0 MB (4,194,304 bytes)", "50 uploads per 60 minutes per address (or Hub user)")
    try:
        browser.get(url)
        wait_for(lambda: "demo-vlm-terse" in browser.find_element(By.ID, "models-table").text)
        wait_for(lambda: _legend(browser))
        assert _legend(browser) == ["#1", "#2", "#3"]  # three rows, three lines in the legend (was #1–#5)
        fit = _columns_fit(browser, "models-table")
        assert fit["scroll"] <= fit["client"] + 1, fit
        assert all(fit["heads"][c] <= fit["right"] + 1 for c in ("note", "submitter", "id")), fit

        tab(browser, "How to take part")
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#inputs-zip button, button#inputs-zip").is_enabled())
        guide = " ".join(browser.find_element(By.ID, "take-part-guide").text.split())
        browser.find_element(By.CSS_SELECTOR, "#inputs-zip button, button#inputs-zip").click()
        zipped = wait_for(lambda: [p for p in downloads.glob("*.zip") if not p.name.endswith(".crdownload")])[0]
        time.sleep(0.5)
        with zipfile.ZipFile(zipped) as zf:
            readme = " ".join(zf.read("demo-inputs/README.md").decode().split())
            assert {(i.external_attr >> 16) & 0o777 for i in zf.infolist()} == {0o644}

        tab(browser, "Submit")
        limits = " ".join(wait_for(lambda: browser.find_element(By.ID, "submit-limits").text).split())
        file_label = browser.find_element(By.ID, "submit-file").text
        for words in limit_words:
            assert words in limits and words in guide and words in readme, (words, limits, guide, readme)
        assert "at most 4.0 MB (4,194,304 bytes)" in file_label
        big = tmp_path / "big.jsonl"
        big.write_bytes(b'{"id": "x", "text": "' + b"y" * (5 * 2**20) + b'"}\n')
        browser.find_element(By.CSS_SELECTOR, "#submit-file input[type=file]").send_keys(str(big))
        popup = wait_for(
            lambda: next((t for t in [browser.find_element(By.TAG_NAME, "body").text] if "exceed" in t), "")
        )
        assert re.search(r"exceed the maximum allowed size of 4\.0 Mb", popup), popup  # Gradio's words, our number
        shoot(browser, tmp_path, "4-size-popup")

        upload = tmp_path / "outputs.jsonl"
        upload.write_text(
            "".join(json.dumps({**r, "text": r["text"] + " No friction."}) + "\n" for r in demo_outputs(1)),
            encoding="utf-8",
        )
        browser.get(url)  # a fresh form
        _listen(browser)
        tab(browser, "Submit")
        name = "friction-free-vlm"
        wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#submit-name input, #submit-name textarea")).send_keys(
            name
        )
        browser.find_element(By.CSS_SELECTOR, "#submit-file input[type=file]").send_keys(str(upload))
        wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#submit-file [aria-label='outputs.jsonl']"))
        browser.find_element(By.ID, "submit-button").click()
        reply = wait_for(lambda: browser.find_element(By.ID, "submit-result").text)
        sid = re.search(r"received: submission ([0-9a-f]{32}) is PENDING", reply).group(1)
        link = wait_for(lambda: browser.find_element(By.CSS_SELECTOR, "#submit-result a"))
        assert link.get_attribute("href").endswith(f"?submission={sid}")
        scoring = threading.Thread(target=worker.run, kwargs={"once": True})
        scoring.start()
        scoring.join(timeout=120)
        # No click from here on: the reply follows the submission, the Models table follows the store.
        done = wait_for(lambda: "Now: DONE: rank" in browser.find_element(By.ID, "submit-result").text, timeout=60)
        # Every announcement of the whole flow (which ones Gradio makes varies from run to run) is words, and
        # the page carries the English string for the key Gradio 6.31 lacks.
        announced = _announced(browser)
        assert done and not [a for a in announced if "common." in a], sorted(set(announced))
        served = browser.execute_script("return (window.gradio_config || {}).i18n_translations || null;")
        assert served == {"en": {"common.complete": "Done."}}, served
        shoot(browser, tmp_path, "5-reply-followed")
        tab(browser, "Models")
        wait_for(lambda: name in browser.find_element(By.ID, "models-table").text, timeout=60)
        try:
            wait_for(lambda: _legend(browser) == ["#1", "#2", "#3", "#4"], timeout=30)
        except AssertionError:
            shoot(browser, tmp_path, "6-legend-not-updated")
            marks = browser.execute_script(
                "return [...document.querySelectorAll('#models-plot [aria-label]')]"
                ".map(e => e.getAttribute('aria-label'))"
                ".filter(l => l.includes('place: #4')).length;"
            )
            raise AssertionError(f"legend: {_legend(browser)}; marks of #4: {marks}") from None
        fit = _columns_fit(browser, "models-table")
        assert fit["scroll"] <= fit["client"] + 1 and fit["heads"]["id"] <= fit["right"] + 1, fit
        shoot(browser, tmp_path, "6-table-updated")
        tab(browser, "Submit")
        browser.find_element(By.CSS_SELECTOR, "#submit-result a").click()  # the reply's link: the page on it
        if len(browser.window_handles) > 1:  # Gradio opens Markdown links in a new tab
            browser.switch_to.window(browser.window_handles[-1])
        assert browser.current_url.endswith(f"?submission={sid}")
        page = wait_for(lambda: browser.find_element(By.ID, "submission-page").text, timeout=30)
        assert name in page and sid in page and "Status: DONE" in page
        shoot(browser, tmp_path, "7-submission-page")
    finally:
        demo.close()
