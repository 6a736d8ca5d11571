"""Meta-evaluation of pairwise judges: Pascal-50S's four categories through the pair path give what today's
meta-evaluation gives (FLEUR-layout per-caption scores, our synthetic fixture), ``compare`` read directly on
the human pairs, the pair layout of judgments files, and one table with intervals."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

import mmjudge.datasets as md
from mmjudge import HarmonicEval
from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval import accuracy_table, meta_evaluate
from mmjudge.metaeval.pairwise_judges import (
    compare_judgments,
    human_pairs,
    pairwise_meta_evaluate,
    pointwise_preferences,
)
from mmjudge.testing import ScriptedJudge
from repo_paths import FIXTURES

FIXTURE = FIXTURES / "pascal50s"
CATEGORIES = ("HC", "HI", "HM", "MM")
BLOCK = re.compile(
    r"image file : (.*)\nlabel : (\d)\n\ncaption : (.*)\nmodel score : .*\nour score : (\S+)\n\n"
    r"caption : (.*)\nmodel score : .*\nour score : (\S+)"
)


def fleur_results(category: str) -> tuple[list[tuple], int]:
    """(image, label, caption a, score a, caption b, score b) per pair, and FLEUR's own true count."""
    text = (FIXTURE / f"fleur_pascal_{category}.txt").read_text()
    blocks = [(img, int(lab), a, float(sa), b, float(sb)) for img, lab, a, sa, b, sb in BLOCK.findall(text)]
    return blocks, int(re.search(r"true count : (\d+)", text).group(1))


@pytest.fixture(scope="module")
def pascal(tmp_path_factory):
    """The fixture loaded as today's meta-evaluation reads it, and FLEUR's per-caption scores by item id."""
    cache = tmp_path_factory.mktemp("hf")
    counts = {"test": 12, "per_category": 3, "votes_per_pair": 48}
    ds = md.load_dataset("pascal50s", data_dir=str(FIXTURE), cache_dir=str(cache), expected_counts=counts)["test"]
    hj = md.human_judgments("pascal50s", ds)
    scores, true_counts = {}, {}
    for category in CATEGORIES:
        blocks, true_counts[category] = fleur_results(category)
        rows = [r for r in ds if r["category"] == category]
        for row, (image, _label, a, score_a, b, score_b) in zip(rows, blocks, strict=True):
            assert (row["text_a"], row["text_b"]) == (a, b) and row["image_path"].endswith(Path(image).name)
            scores[f"{row['id']}-a"], scores[f"{row['id']}-b"] = {"score": score_a}, {"score": score_b}
    return hj, scores, true_counts


def accuracy_records(result, name):
    keys = ("kind", "criterion", "subset", "value", "ci_low", "ci_high", "n_pairs", "n_units", "n_failed")
    return [{k: r[k] for k in keys} for r in result.find(name, measure="accuracy")]


def test_pascal50s_fleur_scores_give_the_same_accuracies_through_the_pair_path(pascal):
    hj, scores, true_counts = pascal
    today = meta_evaluate(hj, {"fleur": scores}, bootstrap=300)
    through_pairs = pairwise_meta_evaluate(hj, {}, scores={"fleur": scores}, bootstrap=300)
    assert accuracy_records(through_pairs, "fleur") == accuracy_records(today, "fleur")
    # The metric turned into pair preferences (1, 0, ½) and read as a pairwise judge: the same figures again.
    as_judge = pairwise_meta_evaluate(
        hj, {"fleur": pointwise_preferences(scores, human_pairs(hj), "score")}, bootstrap=300
    )
    assert accuracy_records(as_judge, "fleur") == accuracy_records(today, "fleur")
    # And FLEUR's own counts in its result files (a tie is wrong): 1 of 3 right per category.
    for category in CATEGORIES:
        assert today.value("fleur", measure="accuracy", subset=category) == true_counts[category] / 3
    assert math.isclose(today.value("fleur", measure="accuracy", subset="avg"), 1 / 3)
    low, high = today.find("fleur", subset="avg")[0]["ci_low"], today.find("fleur", subset="avg")[0]["ci_high"]
    assert low < 1 / 3 < high


def score_judge(scores_by_text: dict[str, float]) -> ScriptedJudge:
    """A pairwise judge that prefers the caption with the higher fixture score (equal: an even split)."""
    slots = re.compile(r"Text A: (.*)\nText B: (.*)\n")

    def answer(request):
        first, second = slots.search(request.turns[0].text).groups()
        x, y = scores_by_text[first], scores_by_text[second]
        return [0.9, 0.1, 0.0] if x > y else [0.1, 0.9, 0.0] if x < y else [0.4, 0.4, 0.2]

    return ScriptedJudge(answer)


def test_pascal50s_categories_directly_from_compare(pascal):
    hj, scores, true_counts = pascal
    text_of = {item["id"]: item["text"] for item in hj.items}
    judge = score_judge({text_of[i]: v["score"] for i, v in scores.items()})
    he = HarmonicEval(judge=judge, criteria=["fluency"], cache=False)
    preferences = compare_judgments(he.pairwise(), hj)
    assert len(judge.requests) == 2 * len(human_pairs(hj))  # both orders of every human pair
    result = pairwise_meta_evaluate(hj, {"compare": preferences}, scores={"fleur": scores}, bootstrap=300)
    for category in CATEGORIES:  # right where FLEUR's scores are right; its ties are exact ties (½) here
        assert result.value("compare", measure="accuracy", subset=category) == true_counts[category] / 3
    half = pairwise_meta_evaluate(hj, {"compare": preferences}, ties="half", bootstrap=0)
    assert half.value("compare", measure="accuracy", subset="HC") == 0.5  # right, wrong, tie -> 1.5 / 3
    table = accuracy_table(result).markdown()
    assert "| compare |" in table and "| fleur |" in table and "(" in table  # one table, with intervals


def pair_layout_file(tmp_path) -> Path:
    data = {
        "schema": "mmjudge.human_judgments",
        "version": 1,
        "name": "my-study",
        "correlation": "accuracy",
        "pairs": [
            {"id": "q1", "text_a": "A dog runs.", "text_b": "dog run.", "choice": "a", "criteria": {"fluency": "a"}},
            {
                "id": "q2",
                "text_a": "A cat.",
                "text_b": "A cat sleeps on a red sofa.",
                "choice": "b",
                "criteria": {"fluency": "tie", "conciseness": "a"},
            },
            {"id": "q3", "text_a": "Two birds.", "text_b": "Three birds fly.", "choice": "tie"},
        ],
    }
    path = tmp_path / "study.json"
    path.write_text(json.dumps(data))
    return path


def test_pair_layout_judgments_files_per_criterion(tmp_path):
    hj = HumanJudgments.load(pair_layout_file(tmp_path))
    assert [i["id"] for i in hj.items] == ["q1-a", "q1-b", "q2-a", "q2-b", "q3-a", "q3-b"]
    assert [(p["better"], p.get("criterion")) for p in hj.pairs] == [
        ("q1-a", None),
        ("q1-a", "fluency"),
        ("q2-b", None),
        ("q2-a", "conciseness"),
    ]
    # The judge: longer is better overall, shorter is more concise, and fluency by a fixed table.
    slots = re.compile(r"Text A: (.*)\nText B: (.*)\n")

    def answer(request):
        a, b = slots.search(request.turns[0].text).groups()
        longer = len(a) > len(b)
        p = {"fluency": 0.8 if a == "A dog runs." else 0.2, "conciseness": 0.3 if longer else 0.7}[request.group]
        return [p, 1 - p, 0.0]

    he = HarmonicEval(judge=ScriptedJudge(answer), criteria=["fluency", "conciseness"], cache=False)
    result = pairwise_meta_evaluate(hj, {"judge": compare_judgments(he.pairwise(), hj)}, bootstrap=0)
    assert result.value("judge", measure="accuracy", criterion="fluency") == 1.0
    assert result.value("judge", measure="accuracy", criterion="conciseness") == 1.0
    assert result.find("judge", criterion="fluency")[0]["score_key"] == "fluency"  # the judge's own criterion
    assert result.value("judge", measure="accuracy", criterion="overall") == 0.5  # q1 right, q2 wrong


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        (
            {"text_a": "x", "text_b": "y", "choice": "A"},
            r"pairs\[0\]: expected 'choice' to be one of \['a', 'b', 'tie'\]",
        ),
        ({"text_a": "x", "text_b": " ", "choice": "a"}, r"pairs\[0\]: expected 'text_b' to be a non-empty text"),
        ({"text_a": "x", "text_b": "y", "choice": "a", "criteria": {"fluency": 1}}, r"criteria\['fluency'\]"),
    ],
)
def test_pair_layout_mistakes_are_one_line(pair, message):
    with pytest.raises(ValueError, match=message):
        HumanJudgments.from_dict({"name": "x", "pairs": [pair]}, "study.json")


def test_a_judge_missing_a_human_pair_is_named():
    hj = HumanJudgments(name="toy", items=[{"id": i} for i in "ab"], pairs=[{"better": "a", "worse": "b"}])
    with pytest.raises(ValueError, match="judge: no preference for the pair 'a' vs 'b'"):
        pairwise_meta_evaluate(hj, {"judge": {}}, bootstrap=0)


def test_cli_metaeval_pairwise_puts_the_judge_beside_the_metrics(pascal, tmp_path, capsys):
    from mmjudge.cli import main

    hj, scores, _ = pascal
    path = tmp_path / "judgments.json"
    hj.save(path)
    with open(tmp_path / "fleur.jsonl", "w") as f:
        for item_id, values in scores.items():
            f.write(json.dumps({"id": item_id, **values}) + "\n")
    args = ["metaeval", "--judgments", str(path), "--scores", str(tmp_path / "fleur.jsonl"), "--pairwise"]
    assert main([*args, "--judge", "dummy", "--no-cache", "--set", 'criteria=["fluency"]', "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "| harmonic_eval:pairwise |" in out and "| fleur | 33.3" in out
