"""What users rely on by name: evaluate.load by bare name offline, the CLI, the module registration."""

import json
import subprocess
import sys
import textwrap

import pytest
from PIL import Image

from mmjudge.adapters import evaluate_registry
from mmjudge.cli import main
from repo_paths import ROOT

pytestmark = pytest.mark.filterwarnings("ignore:HarmonicEval. the judge put under")


@pytest.mark.slow
def test_evaluate_load_by_bare_name_offline_for_all_tasks(tmp_path, tiny_qwen_dir, offline_env):
    env = offline_env
    # First process: importing mmjudge registers the evaluate shells in the (empty) module cache.
    subprocess.run([sys.executable, "-c", "import mmjudge"], env=env, check=True, cwd=tmp_path)
    # Second process: plain evaluate, never importing mmjudge itself, from a folder with no metrics/.
    script = textwrap.dedent(
        f"""
        import json, evaluate
        from PIL import Image
        img = Image.new("RGB", (64, 48), "green")
        he = evaluate.load("harmonic_eval", model={tiny_qwen_dir!r}, batch_size=4, min_mass=0)
        out = {{}}
        out["ic"] = he.compute(predictions=["A green field."], images=[img], task="ic")
        out["vqa"] = he.compute(predictions=["Green."], images=[img], task="vqa", questions=["What colour?"])
        out["vdu"] = he.compute(predictions=["4.2 million."], images=[img], task="vdu", questions=["Revenue?"])
        out["reg"] = he.compute(predictions=["left half"], images=[img], task="reg", boxes=[[0, 0, 32, 48]])
        text_only = evaluate.load("harmonic_eval", judge="dummy", criteria=["fluency"], cache=False)
        out["text_only"] = text_only.compute(predictions=["A dog runs."])
        print(json.dumps(out))
        """
    )
    run = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    # The engine in this process, on the same inputs, gives the same numbers (tiny random weights: plumbing).
    from mmjudge import HarmonicEval

    engine = HarmonicEval(model=tiny_qwen_dir, batch_size=4, min_mass=0, cache=False)
    img = Image.new("RGB", (64, 48), "green")
    calls = {
        "ic": dict(predictions=["A green field."]),
        "vqa": dict(predictions=["Green."], questions=["What colour?"]),
        "vdu": dict(predictions=["4.2 million."], questions=["Revenue?"]),
        "reg": dict(predictions=["left half"], boxes=[[0, 0, 32, 48]]),
    }
    for task, inputs in calls.items():
        expected = engine.compute(images=[img], task=task, progress=False, **inputs)
        for key in ("overall", "correctness", "fluency_sigma", "conciseness_weight", "mean_overall"):
            assert out[task][key] == pytest.approx(expected[key], abs=1e-6), (task, key)
        assert out[task]["signature"] == str(expected["signature"])
    assert list(out["text_only"]) == [
        "overall",
        "fluency",
        "fluency_sigma",
        "fluency_weight",
        "fluency_mass",
        "fluency_status",
        "fluency_note",
        "mean_overall",
        "mean_fluency",
        "scored",
        "failures",
        "signature",
    ]
    dummy = HarmonicEval(judge="dummy", criteria=["fluency"], cache=False).compute(predictions=["A dog runs."])
    assert out["text_only"]["fluency"] == pytest.approx(dummy["fluency"], abs=1e-12)
    assert (tmp_path / "judge.sqlite").is_file()  # the cache is on by default


def test_evaluate_load_from_the_checkout(tmp_path):
    import evaluate

    he = evaluate.load(str(ROOT / "metrics" / "harmonic_eval"), judge="dummy", cache=False, criteria=["clarity"])
    out = he.compute(predictions=["Clear text.", "Also clear."])
    assert len(out["clarity"]) == 2 and out["signature"].startswith("mmjudge=")


def test_registration_is_idempotent_and_picks_the_current_shell(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))
    first = evaluate_registry.register()
    assert [p.name for p in first] and all(p.is_file() for p in first)
    assert evaluate_registry.register() == first
    target = next(p for p in first if p.name == "harmonic_eval.py")
    assert target.read_bytes() == (ROOT / "metrics" / "harmonic_eval" / "harmonic_eval.py").read_bytes()
    assert target.parent.parent.name == "evaluate-metric--harmonic_eval" and len(target.parent.name) == 64


def test_cli_scores_one_item_and_writes_jsonl(tmp_path, capsys):
    from PIL import Image

    image = tmp_path / "photo.png"
    Image.new("RGB", (40, 30), "blue").save(image)
    out = tmp_path / "scores.jsonl"
    code = main(
        [
            "score",
            "--task",
            "ic",
            "--image",
            str(image),
            "--text",
            "A blue square.",
            "--judge",
            "dummy",
            "--no-cache",
            "--explain",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    for word in (
        "overall",
        "correctness",
        "completeness",
        "clarity",
        "fluency",
        "conciseness",
        "sigma",
        "weight",
        "signature:",
    ):
        assert word in printed
    assert "correctness_explanation" in printed
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["id"] == "0" and set(row) >= {"overall", "fluency_sigma", "clarity_weight"}


def test_cli_scores_the_bundled_examples_with_a_real_model_folder(tmp_path, capsys, tiny_qwen_dir):
    code = main(["score", "--examples", "--model", tiny_qwen_dir, "--cache", str(tmp_path / "c.sqlite")])
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.count("task=") == 5 and "task=reg" in printed and "task=vdu" in printed


def test_cli_reports_bad_input_without_a_traceback(capsys):
    assert main(["score", "--text", "A dog.", "--judge", "dummy", "--no-cache"]) == 2
    assert "`images` are required" in capsys.readouterr().err
    assert main(["score", "--text", "x", "--image", "/nope.png", "--judge", "dummy", "--no-cache"]) == 2
    assert "image file not found" in capsys.readouterr().err


def test_cli_register(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_MODULES_CACHE", str(tmp_path / "modules"))
    assert main(["register"]) == 0
    assert "registered harmonic_eval" in capsys.readouterr().out
