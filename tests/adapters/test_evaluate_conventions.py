"""The evaluate conventions: add_batch + compute with images, evaluate.combine with our modules and a
Hub-style one, compute keywords passed through, Hub-ready module folders, and the Gradio 6 widget.

All offline: the `dummy` judge (a hash-based stand-in) and a tiny random-weight CLIP prove plumbing,
never quality.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from repo_paths import ROOT

evaluate = pytest.importorskip("evaluate")

METRICS = ROOT / "metrics"
NAMES = (
    "harmonic_eval",
    "fleur",
    "expert",
    "clip_score",
    "baselines",
    "pac_s",
    "polos",
    "infometic",
    "capture",
    "prompt_judge",
)


pytestmark = pytest.mark.usefixtures("offline")  # conftest.py: offline, private caches


def _load(name, *args, **kwargs):
    return evaluate.load(str(METRICS / name), *args, **kwargs)


IMAGES = [Image.new("RGB", (48, 40), c) for c in ("red", "blue", "green")]
PREDS = ["A red square.", "A blue square on white.", "Green."]
REFS = [["a red square"], ["a blue square"], ["a green square", "green"]]


@pytest.mark.parametrize("name", NAMES)
def test_module_folder_loads_offline_as_its_own_class(name, tmp_path):
    kwargs = {"judge": "dummy", "cache": False} if name in ("harmonic_eval", "fleur", "expert", "prompt_judge") else {}
    if name == "clip_score":
        kwargs = {"model": "tiny-random", "cache": False}
    if name in ("pac_s", "polos"):  # tiny random checkpoints in the authors' formats
        from mmjudge.tiny_models.checkpoints import tiny_pac_s, tiny_polos

        kwargs = (tiny_pac_s if name == "pac_s" else tiny_polos)(tmp_path / name)
    if name == "infometic":  # a tiny random checkpoint and region features in the authors' layout
        from mmjudge.tiny_models.infometic import tiny_infometic

        kwargs = tiny_infometic(tmp_path / name)
    if name == "capture":  # a tiny parser, encoder and tagger; WordNet from Debian (what CI installs)
        from mmjudge.metrics.capture.text import DEBIAN_WORDNET
        from mmjudge.tiny_models import tiny_nltk_data, tiny_scene_graph_parser, tiny_sentence_encoder

        if not (DEBIAN_WORDNET / "index.sense").is_file():
            pytest.skip("needs Debian's wordnet-base and wordnet-sense-index")
        kwargs = {
            "parser": tiny_scene_graph_parser(tmp_path / "parser"),
            "encoder": tiny_sentence_encoder(tmp_path / "encoder"),
            "nltk_data": tiny_nltk_data(tmp_path / "nltk"),
            "stop_words": False,
        }
    module = _load(name, **kwargs)
    assert type(module).__name__ != "EngineMetric" and type(module).__module__ != "mmjudge.adapters.evaluate_metric"
    assert module.engine.name == name
    assert "predictions" in module._feature_names()


def test_harmonic_eval_add_batch_with_images_equals_one_compute():
    he = _load("harmonic_eval", judge="dummy", cache=False)
    assert he._feature_names() == ["predictions", "images"]
    whole = he.compute(predictions=PREDS, images=IMAGES, progress=False)
    he.add_batch(predictions=PREDS[:2], images=IMAGES[:2])
    he.add_batch(predictions=PREDS[2:], images=IMAGES[2:])
    batched = he.compute(progress=False)
    assert batched["overall"] == whole["overall"] and batched["signature"] == whole["signature"]
    engine = he.engine.compute(predictions=PREDS, images=IMAGES, progress=False)
    np.testing.assert_allclose(batched["overall"], engine["overall"], rtol=0, atol=0)


def test_compute_with_its_inputs_skips_the_arrow_round_trip(monkeypatch):
    """``compute(predictions=..., references=...)`` with nothing added before hands the columns to the engine
    as given (the round trip encoded and decoded every row in Python, 1.4x the engine on Flickr8k-Expert);
    batches still go through Arrow. Both give the engine's numbers; array columns become lists as before."""
    from mmjudge.metrics.baselines import Baselines
    from mmjudge.metrics.baselines.synthetic import flickr8k_expert_shaped

    texts, refs = flickr8k_expert_shaped(images=20, pairs=30, judgments=2, seed=1)
    engine = Baselines("coco").compute(predictions=texts, references=refs, progress=False)
    module = _load("baselines", "coco")

    def no_arrow(*args, **kwargs):
        raise AssertionError("the rows went through the Arrow buffer")

    with monkeypatch.context() as patch:
        patch.setattr(evaluate.EvaluationModule, "add_batch", no_arrow)
        assert module.compute(predictions=texts, references=refs, progress=False) == engine
        as_arrays = module.compute(predictions=np.array(texts), references=np.array(refs), progress=False)
        assert as_arrays == engine
    module.add_batch(predictions=texts[:25], references=refs[:25])
    module.add_batch(predictions=texts[25:], references=refs[25:])
    assert module.compute(progress=False) == engine
    with pytest.raises(ValueError, match=r"inputs are missing: \['references'\]"):
        module.compute(predictions=texts)


def test_side_inputs_questions_and_boxes_through_add_batch():
    he = _load("harmonic_eval", judge="dummy", cache=False)
    boxes = [[2, 2, 20, 20], [5, 5, 10, 10], [0, 0, 48, 40]]
    he.add_batch(predictions=PREDS[:1], images=IMAGES[:1], boxes=boxes[:1])
    he.add_batch(predictions=PREDS[1:], images=IMAGES[1:], boxes=boxes[1:])
    batched = he.compute(task="reg", progress=False)
    direct = he.engine.compute(predictions=PREDS, images=IMAGES, boxes=boxes, task="reg", progress=False)
    assert batched["overall"] == direct["overall"]
    questions = ["What colour?", "What shape?", "Which colour?"]
    vqa = he.compute(predictions=PREDS, images=IMAGES, questions=questions, task="vqa", progress=False)
    assert (
        vqa["overall"]
        == he.engine.compute(predictions=PREDS, images=IMAGES, questions=questions, task="vqa", progress=False)[
            "overall"
        ]
    )
    with pytest.raises(ValueError, match="unknown compute keyword 'temperature'"):
        he.compute(predictions=PREDS, images=IMAGES, temperature=2)


def test_fleur_and_clip_score_add_batch_with_images_and_references():
    fleur = _load("fleur", "reffleur", judge="dummy", cache=False)
    assert fleur._feature_names() == ["predictions", "images", "references"]
    fleur.add_batch(predictions=PREDS, images=IMAGES, references=REFS)
    out = fleur.compute(progress=False)
    direct = fleur.engine.compute(predictions=PREDS, images=IMAGES, references=REFS, progress=False)
    assert out["method"] == direct["method"] and np.allclose(out["raw_score"], direct["raw_score"], equal_nan=True)
    clip = _load("clip_score", "ref_clip_score", model="tiny-random", cache=False)
    clip.add_batch(predictions=PREDS[:2], images=IMAGES[:2], references=REFS[:2])
    clip.add_batch(predictions=PREDS[2:], images=IMAGES[2:], references=REFS[2:])
    out = clip.compute()
    direct = clip.engine.compute(predictions=PREDS, images=IMAGES, references=REFS)
    np.testing.assert_allclose(out["ref_clip_score"], direct["ref_clip_score"], atol=1e-6)


HUB_STYLE = '''
import datasets
import evaluate


class WordOverlap(evaluate.Metric):
    """A Hub-style module written the usual way (features predictions/references)."""

    def _info(self):
        return evaluate.MetricInfo(
            description="share of prediction words found in the first reference",
            citation="",
            inputs_description="",
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Sequence(datasets.Value("string"))}),
        )

    def _compute(self, predictions, references):
        shares = [len(set(p.lower().split()) & set(r[0].lower().split())) / len(p.split())
                  for p, r in zip(predictions, references)]
        return {"word_overlap": sum(shares) / len(shares)}
'''


def test_combine_mixes_our_modules_and_a_hub_style_module(tmp_path):
    folder = tmp_path / "word_overlap"
    folder.mkdir()
    (folder / "word_overlap.py").write_text(HUB_STYLE)
    he = _load("harmonic_eval", judge="dummy", cache=False, criteria=["correctness", "fluency"])
    fleur = _load("fleur", judge="dummy", cache=False)
    rouge = _load("baselines", "rouge_l")
    hub = evaluate.load(str(folder))
    combined = evaluate.combine([he, fleur, rouge, hub])
    combined.add_batch(predictions=PREDS[:2], references=REFS[:2], images=IMAGES[:2])
    combined.add_batch(predictions=PREDS[2:], references=REFS[2:], images=IMAGES[2:])
    out = combined.compute()
    expected_overlap = np.mean(
        [1.0, 1.0, 1.0]
    )  # every prediction word is in its first reference (case, punctuation aside)
    assert out["word_overlap"] == pytest.approx(
        np.mean([len(set(p.lower().split()) & set(r[0].split())) / len(p.split()) for p, r in zip(PREDS, REFS)])
    )
    assert expected_overlap >= out["word_overlap"]
    assert len(out["overall"]) == 3 and len(out["rouge_l"]) == 3 and len(out["score"]) == 3
    assert {"harmonic_eval_signature", "fleur_signature", "baselines_signature"} <= set(out)
    direct = he.engine.compute(predictions=PREDS, images=IMAGES, progress=False)
    assert out["overall"] == direct["overall"]


def test_progress_false_passes_through_the_shell(capfd):
    he = _load("harmonic_eval", judge="dummy", cache=False, batch_size=1)
    he.compute(predictions=PREDS, images=IMAGES, progress=True)
    assert "rating" in capfd.readouterr().err
    he.compute(predictions=PREDS, images=IMAGES, progress=False)
    assert "rating" not in capfd.readouterr().err


def test_hf_hub_disable_progress_bars_is_honoured(capfd, monkeypatch):
    he = _load("harmonic_eval", judge="dummy", cache=False, batch_size=1)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    he.compute(predictions=PREDS, images=IMAGES)
    assert "rating" not in capfd.readouterr().err


SPACE_KEYS = (
    "title",
    "emoji",
    "colorFrom",
    "colorTo",
    "sdk",
    "sdk_version",
    "app_file",
    "pinned",
    "tags",
    "description",
)
HEADINGS = (
    "## Metric Description",
    "## Intended Uses",
    "## How to Use",
    "### Inputs",
    "### Output Values",
    "### Values from Popular Papers",
    "## Examples",
    "## Limitations and Bias",
    "## Citation",
    "## Further References",
)


@pytest.mark.parametrize("name", NAMES)
def test_module_folder_is_hub_ready(name):
    yaml = pytest.importorskip("yaml")
    folder = METRICS / name
    text = (folder / "README.md").read_text(encoding="utf-8")
    front = yaml.safe_load(text.split("---\n")[1])
    assert all(key in front for key in SPACE_KEYS), set(SPACE_KEYS) - set(front)
    assert front["sdk"] == "gradio" and front["app_file"] == "app.py" and {"evaluate", "metric"} <= set(front["tags"])
    assert int(str(front["sdk_version"]).split(".")[0]) >= 6
    for heading in HEADINGS:
        assert f"\n{heading}\n" in text, f"{name}: card lacks {heading!r}"
    assert "```bibtex" in text
    assert (folder / "app.py").is_file() and "launch_widget" in (folder / "app.py").read_text()
    requirements = (folder / "requirements.txt").read_text().split()
    assert any(r.startswith("mmjudge") for r in requirements) and "gradio>=6" in requirements


def test_widget_builds_from_declared_inputs():
    pytest.importorskip("gradio")
    import gradio as gr

    from mmjudge.adapters.gradio_widget import build_widget

    he = _load("harmonic_eval", judge="dummy", cache=False)
    demo = build_widget(he)
    kinds = [type(c).__name__ for c in demo.input_components]
    assert kinds == [
        "Textbox",
        "Image",
        "Textbox",
        "Textbox",
        "Dropdown",
    ]  # predictions, images, questions, boxes, task
    assert isinstance(demo.output_components[0], gr.JSON)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_app_py_serves_the_widget_and_gradio_client_scores(tmp_path):
    pytest.importorskip("gradio")
    client_mod = pytest.importorskip("gradio_client")
    port = _free_port()
    env = dict(
        os.environ,
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_SERVER_PORT=str(port),
        GRADIO_ANALYTICS_ENABLED="False",
        MMJUDGE_WIDGET_OPTIONS=json.dumps({"judge": "dummy", "cache": False}),
        PYTHONPATH=str(ROOT),
    )
    with open(tmp_path / "app.log", "w") as log:  # the child keeps its own copy of the file
        proc = subprocess.Popen(
            [sys.executable, str(METRICS / "harmonic_eval" / "app.py")], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert proc.poll() is None, (tmp_path / "app.log").read_text()
                assert time.monotonic() < deadline, "the widget did not start"
                time.sleep(0.5)
        image = tmp_path / "red.png"
        IMAGES[0].save(image)
        client = client_mod.Client(url, verbose=False)
        row = client.predict("A red square.", client_mod.handle_file(str(image)), "", "", "ic", api_name="/score")
        if isinstance(row, str):
            row = json.loads(row)
        expected = _load("harmonic_eval", judge="dummy", cache=False).compute(
            predictions=["A red square."], images=[Image.open(image)], progress=False
        )
        assert row["overall"] == pytest.approx(expected["overall"][0], abs=1e-12)
        assert row["signature"] == str(expected["signature"])
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_bare_name_loading_in_fresh_processes_notice_at_most_once(offline_env):
    env = offline_env
    code = (
        "import mmjudge, evaluate\n"
        "m = evaluate.load('harmonic_eval', judge='dummy', cache=False)\n"
        "evaluate.load('baselines', 'bleu')\n"
        "print(type(m).__name__)\n"
    )
    for _ in range(2):  # the first process registers, the second only loads
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "HarmonicEval"
        # evaluate's line comes before our shell is imported: shown for the first load, dropped after it
        assert done.stderr.count("Using the latest cached version") <= 1, done.stderr
        assert "evaluate-metric--baselines" not in done.stderr
    # A process that never imports mmjudge still finds the registered module by bare name.
    plain = subprocess.run(
        [sys.executable, "-c", "import evaluate; print(type(evaluate.load('baselines', 'bleu')).__name__)"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert plain.returncode == 0 and plain.stdout.strip() == "Baselines", plain.stderr


def test_importing_mmjudge_twice_writes_nothing_and_touches_no_logger(tmp_path, offline_env):
    """The first import registers the shells (only what is missing); a second one finds them and writes
    nothing — no file, no modification time — and no import installs a filter on evaluate's logger."""
    code = "import logging, mmjudge\nprint(len(logging.getLogger('evaluate.loading').filters))\n"
    modules = tmp_path / "hf" / "modules" / "evaluate_modules"

    def snapshot() -> dict:
        return {str(p): (p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in sorted(modules.rglob("*"))}

    first = subprocess.run([sys.executable, "-c", code], env=offline_env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and first.stdout.strip() == "0", first.stderr
    written = snapshot()
    assert any(name.endswith("harmonic_eval.py") for name in written)
    second = subprocess.run([sys.executable, "-c", code], env=offline_env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and second.stdout.strip() == "0", second.stderr
    assert snapshot() == written


def test_the_readme_quick_start_runs_in_a_fresh_hf_home_after_register(offline_env):
    """README's Quick start as printed (evaluate alone, no mmjudge import) after the one command it names."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Quick start")
    assert "mmjudge register" in readme[start : readme.index("```python", start)]
    registered = subprocess.run(
        [sys.executable, "-m", "mmjudge.cli", "register"], env=offline_env, capture_output=True, text=True, timeout=300
    )
    assert registered.returncode == 0, registered.stderr
    code = "import evaluate\nhe = evaluate.load('harmonic_eval', judge='dummy', cache=False)\nprint(he.name)\n"
    done = subprocess.run([sys.executable, "-c", code], env=offline_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "harmonic_eval", done.stderr


def test_no_register_opt_out_writes_nothing(tmp_path, offline_env):
    env = dict(offline_env, MMJUDGE_NO_REGISTER="1")
    done = subprocess.run(
        [sys.executable, "-c", "import mmjudge"], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "hf" / "modules" / "evaluate_modules").exists()


def test_cache_keys_hold_nothing_about_speed_only_settings(tiny_llava_dir):
    """Batch size, prefetching, prefix sharing and concurrency change speed, never answers: the backends
    that have them leave them out of their identity (cache keys and signatures), while a setting that does
    change answers (what an API returns per position) is in it."""
    from mmjudge.judges import load_judge
    from mmjudge.judges.requests import RatingRequest, Turn, request_key

    request = RatingRequest([Turn("user", "Rate: a dog.")])
    assert "batch" not in json.dumps(request.payload())
    local = [
        load_judge("transformers", model=tiny_llava_dir, batch_size=b, prefetch=p, share_prefix=s).identity()
        for b, p, s in ((1, False, False), (8, True, True))
    ]
    assert local[0] == local[1]
    api = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "prefill": "none"}  # settled: no request is sent
    served = [load_judge("openai", batch_size=b, max_concurrency=c, **api).identity() for b, c in ((1, 1), (64, 16))]
    assert served[0] == served[1]
    assert load_judge("openai", top_logprobs=5, **api).identity() != served[0]
    keys = {request_key(identity, "rate", request) for identity in (local[0], local[1])}
    assert len(keys) == 1
