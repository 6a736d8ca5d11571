"""PAC-S and Polos through every front door: ``mmjudge score`` (resumable JSONL output), ``mmjudge
metaeval --metric``, the Space's metric list and scorer, the evaluate shells' add_batch, and ``stream`` —
each giving the numbers ``compute`` gives. Tiny random checkpoints in the authors' formats: plumbing only."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest
from PIL import Image

import mmjudge
from mmjudge.cli import main
from mmjudge.human_judgments import HumanJudgments
from mmjudge.tiny_models.checkpoints import tiny_pac_s, tiny_polos

TEXTS = ["A dog runs on the beach.", "A red cat. It sleeps.", "Two people ride bikes.", "red"]
REFS = [["a dog on a beach"], ["a cat", "red"], ["people on bikes", "a street"], ["something red"]]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("doors")
    colours = ["red", "blue", "green", "gray"]
    images = []
    for i, c in enumerate(colours):
        Image.new("RGB", (40 + 4 * i, 36), c).save(root / f"{i}.png")
        images.append(str(root / f"{i}.png"))
    items = root / "items.jsonl"
    items.write_text(
        "".join(
            json.dumps({"id": f"x{i}", "text": t, "image": images[i], "references": r}) + "\n"
            for i, (t, r) in enumerate(zip(TEXTS, REFS))
        )
    )
    return {
        "root": root,
        "images": images,
        "items": str(items),
        "pac": tiny_pac_s(root / "pac", seed=1),
        "pacpp": tiny_pac_s(root / "pacpp", plus=True, seed=2),
        "polos": tiny_polos(root / "polos"),
    }


def _sets(options):
    return [arg for key, value in options.items() for arg in ("--set", f"{key}={value}")]


@pytest.mark.parametrize("metric,config,key", [("pac_s", "ref_pac_s", "pac"), ("polos", None, "polos")])
def test_score_cli_writes_what_compute_gives(files, tmp_path, metric, config, key, capsys):
    out = tmp_path / "scores.jsonl"
    args = ["score", "--metric", metric, "--input", files["items"], "--output", str(out), "--quiet", "--no-cache"]
    args += (["--config", config] if config else []) + _sets(files[key])
    assert main(args) == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    loaded = mmjudge.load(metric, config, **files[key])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = loaded.compute(predictions=TEXTS, images=files["images"], references=REFS, progress=False)
    primary = loaded.spec.primary
    np.testing.assert_allclose([r[primary] for r in rows], want[primary], atol=1e-6)
    assert [r["id"] for r in rows] == ["x0", "x1", "x2", "x3"]
    assert rows[0]["signature"] == str(want["signature"])


def test_a_missing_checkpoint_is_one_cli_line(tmp_path, capsys):
    code = main(
        [
            "score",
            "--metric",
            "pac_s",
            "--set",
            f"checkpoint={tmp_path / 'clip_ViT-B-32.pth'}",
            "--text",
            "a dog",
            "--image",
            "x.png",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "does not exist: download it from" in err[0]


def test_metaeval_runs_them_on_the_fly(files, tmp_path, capsys):
    rng = np.random.default_rng(0)
    items = [
        {"id": f"x{i}", "task": "ic", "text": t, "image": files["images"][i], "references": r}
        for i, (t, r) in enumerate(zip(TEXTS, REFS))
    ]
    ratings = [
        {"id": it["id"], "task": "ic", "criterion": "overall", "annotator": "a", "score": float(rng.integers(1, 6))}
        for it in items
    ]
    hj = HumanJudgments(name="toy", items=items, ratings=ratings, choices=[], criteria=["overall"])
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(dataclasses.asdict(hj)))
    for metric, options in (("pac_s", files["pac"]), ("polos", files["polos"])):
        out = tmp_path / metric
        args = [
            "metaeval",
            "--judgments",
            str(path),
            "--metric",
            metric,
            "--no-cache",
            "--save-scores",
            "--out",
            str(out),
            "--bootstrap",
            "0",
        ]
        assert main(args + _sets(options)) == 0, capsys.readouterr().err
        saved = [json.loads(line) for line in (out / f"scores_{metric}.jsonl").read_text().splitlines()]
        assert len(saved) == 4 and all(0 <= s[metric] <= 2 for s in saved)


def test_space_offers_them_once_their_checkpoints_are_set(files):
    from mmjudge.space import Settings
    from mmjudge.space.handlers import Scorer, metric_choices

    assert not {"PAC-S", "Polos"} & {c.label for c in metric_choices(Settings())}
    settings = Settings(
        metric_options={
            "pac_s": files["pac"],
            "pac_s:pac_s_plus": files["pacpp"],
            "pac_s:ref_pac_s_plus": files["pacpp"],
            "polos": files["polos"],
        }
    )
    labels = [c.label for c in metric_choices(settings)]
    assert {"PAC-S", "RefPAC-S", "PAC-S++", "RefPAC-S++", "Polos"} <= set(labels)
    item = {
        "task": "ic",
        "text": TEXTS[0],
        "image": Image.open(files["images"][0]).convert("RGB"),
        "references": REFS[0],
    }
    result = Scorer(settings).score(item, ["PAC-S", "RefPAC-S++", "Polos"])
    assert not result.failed and not result.skipped
    direct = mmjudge.load("pac_s", "ref_pac_s_plus", **files["pacpp"]).compute(
        predictions=[TEXTS[0]], images=[item["image"]], references=[REFS[0]], progress=False
    )
    assert result.row("RefPAC-S++")["ref_pac_s_plus"] == pytest.approx(direct["ref_pac_s_plus"][0], abs=1e-6)


def test_evaluate_add_batch_equals_compute(files):
    import evaluate

    module = evaluate.load("metrics/pac_s", "pac_s_avg", **files["pac"])
    for i in range(0, 4, 2):
        module.add_batch(predictions=TEXTS[i : i + 2], images=files["images"][i : i + 2])
    batched = module.compute()
    direct = mmjudge.load("pac_s", "pac_s_avg", **files["pac"]).compute(
        predictions=TEXTS, images=files["images"], progress=False
    )
    np.testing.assert_allclose(batched["pac_s_avg"], direct["pac_s_avg"], atol=1e-6)
    assert batched["sentences"] == [1, 2, 1, 1]
