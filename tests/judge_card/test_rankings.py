"""MLLM-as-a-Judge's batch and score settings on a card, worked by hand on fixtures in its upstream layout
(``Dataset/Benchmark/batch.jsonl``, ``score.jsonl`` + ``Dataset/image/``): the normalised Levenshtein distance of a
verdict file's rankings (checked against NLTK's edit distance), one line for each bad ranking, a scripted judge's
ranking derived from head-to-head comparisons (both orders), Pearson with the human score, and the dummy judge
through both (plumbing)."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from judge_benchmarks import MLLMJ_RANKED, mllmj_common, write_jsonl, write_mllm_judge, write_mllm_judge_ranked
from mmjudge.cli import main
from mmjudge.judge_card.rankings import derived_ranking, distance, letters, levenshtein
from mmjudge.judge_card.run import Settings, judge_card

# MLLMJ_RANKED: mean over the three answered rows (0.5 + 0 + 0.5) / 3 = 1/3; coco (rows 0, 1) 0.25; chartqa (row 2;
# row 3 unanswered) 0.5.
BATCH = MLLMJ_RANKED


@pytest.fixture(autouse=True)
def private_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("MMJUDGE_CACHE", str(tmp_path / "judge.sqlite"))


def _by(rows, measure, subset=""):
    return next(r for r in rows if r["measure"] == measure and r["subset"] == subset)


def batch_repo(root):
    return str(write_mllm_judge_ranked(root))


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def test_the_distance_is_nltks_edit_distance_over_the_number_of_answers():
    nltk = pytest.importorskip("nltk")
    for n in (3, 4):
        for judge, human in itertools.product(itertools.permutations(range(n)), repeat=2):
            a, b = letters(judge), letters(human)
            assert levenshtein(a, b) == nltk.edit_distance(a, b)
            assert distance(judge, human) == nltk.edit_distance(a, b) / n
    assert [distance(row[4], [ord(c) - 65 for c in row[2]]) for row in BATCH[:3]] == [0.5, 0.0, 0.5]


def test_a_derived_ranking_orders_by_summed_wins_and_breaks_ties_by_index():
    # P(0 > 1) = 0.3, P(0 > 2) = 0.6, P(1 > 2) = 0.5: wins 0.9, 1.2, 0.9 -> 1 first, then 0 and 2 tied (index order)
    assert derived_ranking(3, {(0, 1): 0.3, (0, 2): 0.6, (1, 2): 0.5}) == [1, 0, 2]
    # Wins 0.6, 1.2 and 1.2 (0.8 + 0.4, which floats make 1.2000000000000002): a tie, broken by the index.
    assert derived_ranking(3, {(0, 1): 0.0, (0, 2): 0.6, (1, 2): 0.2}) == [1, 2, 0]
    assert derived_ranking(4, {(0, 1): 0.9}) is None  # comparisons missing: no ranking


def test_batch_verdicts_through_the_cli_give_the_distances_worked_by_hand(tmp_path, capsys):
    from types import SimpleNamespace

    from mmjudge.leaderboard.judge_uploads import read_judge_upload

    data = batch_repo(tmp_path / "repo")
    lines = [{"id": f"mllm_judge-batch-{i}", "ranking": said} for i, _, _, _, said, _ in BATCH]
    verdicts = _write(tmp_path / "v.jsonl", lines)
    out = tmp_path / "card"
    argv = ["judge-card", "--benchmarks", "mllm_judge_batch", "--data-dir", f"mllm_judge_batch={data}"]
    assert main([*argv, "--verdicts", f"mllm_judge_batch={verdicts}", "--out", str(out), "--bootstrap", "200"]) == 0
    rows = json.loads((out / "card.json").read_text())
    whole = _by(rows, "levenshtein")
    assert whole["value"] == pytest.approx(1 / 3) and whole["n"] == 3 and whole["low"] <= 1 / 3 <= whole["high"]
    assert (_by(rows, "levenshtein", "coco")["value"], _by(rows, "levenshtein", "coco")["n"]) == (0.25, 2)
    assert (_by(rows, "levenshtein", "chartqa")["value"], _by(rows, "levenshtein", "chartqa")["n"]) == (0.5, 1)
    assert (_by(rows, "no_answer")["value"], _by(rows, "no_answer")["n"]) == (0.25, 4)
    text = (out / "card.md").read_text()
    assert "| mllm_judge_batch | — | levenshtein | 0.333 |" in text and "**lower is better**" in text
    assert "| mllm_judge_batch | — | levenshtein | 0.333 |" in capsys.readouterr().out
    board = SimpleNamespace(card_name="mllm_judge_batch", kind="rankings", ids=[], subsets=("chartqa", "coco"))
    assert read_judge_upload((out / "card.json").read_bytes(), board, None)["rows"] == rows


@pytest.mark.parametrize(
    "line, message",
    [
        ({"ranking": [0, 1]}, "v.jsonl line 2: `ranking` must list the 3 answers' indices (0-2) best first, each once "
                              "(e.g. [1, 0, 2]), but got [0, 1]."),
        ({"ranking": [0, 0, 1]}, "line 2: `ranking` must list the 3 answers' indices (0-2) best first"),
        ({"ranking": "BCA"}, "line 2: `ranking` must list the 3 answers' indices (0-2) best first, each once (e.g. "
                             "[1, 0, 2]), but got 'BCA'."),
        ({"ranking": [1.0, 2.0, 0.0]}, "but got [1.0, 2.0, 0.0]."),
        ({"ranking": [True, False, 2]}, "but got [True, False, 2]."),
        ({"preferred": 0}, "line 2: expected `ranking`, but the object has ['id', 'preferred']."),
    ],
)  # fmt: skip
def test_a_bad_ranking_is_one_line_and_nothing_is_scored(tmp_path, capsys, line, message):
    data = batch_repo(tmp_path / "repo")
    path = _write(tmp_path / "v.jsonl", [{"id": "mllm_judge-batch-0", "ranking": [2, 0, 3, 1]},
                                         {"id": "mllm_judge-batch-1", **line}])  # fmt: skip
    out = tmp_path / "card"
    code = main(["judge-card", "--benchmarks", "mllm_judge_batch", "--data-dir", f"mllm_judge_batch={data}",
                 "--verdicts", f"mllm_judge_batch={path}", "--out", str(out), "--bootstrap", "0"])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 2 and json.loads((out / "card.json").read_text()) == []
    assert "mllm_judge_batch: not run: " in printed.err and message in printed.err, printed.err
    assert "Traceback" not in printed.out + printed.err


def test_a_ranking_for_an_id_the_rows_do_not_have_is_one_line(tmp_path, capsys):
    data = batch_repo(tmp_path / "repo")
    path = _write(tmp_path / "v.jsonl", [{"id": "mllm_judge-batch-9", "ranking": [1, 0]}])
    code = main(["judge-card", "--benchmarks", "mllm_judge_batch", "--data-dir", f"mllm_judge_batch={data}",
                 "--verdicts", f"mllm_judge_batch={path}", "--bootstrap", "0", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "1 verdict(s) name ids the benchmark does not have ('mllm_judge-batch-9')" in err


def test_a_scripted_judge_is_ranked_from_head_to_head_wins_in_both_orders(tmp_path):
    """The judge prefers answers by their model (gpt4 > gemini > llava > cogvlm) whatever slot they sit in. Row 0
    (llava, cogvlm, gpt4, gemini): its ranking is CDAB, the human's (distance 0); row 1 (llava, cogvlm, gpt4):
    CAB against the human BCA, 2 edits of 3. Mean 1/3; 6 + 3 comparisons, each asked in both orders."""
    from mmjudge.metrics.harmonic_eval.metric import HarmonicEval
    from mmjudge.testing import ScriptedJudge

    quality = {"gpt4": 0, "gemini": 1, "llava": 2, "cogvlm": 3}

    def script(request):
        prompt = request.turns[-1].text
        a = re.search(r"\nAnswer A: (\w+) says", prompt).group(1)
        b = re.search(r"\nAnswer B: (\w+) says", prompt).group(1)
        return [0.8, 0.1, 0.1] if quality[a] < quality[b] else [0.1, 0.8, 0.1]

    judge = ScriptedJudge(script)
    he = HarmonicEval(judge=judge, criteria=["correctness"], cache=False)
    root = str(write_mllm_judge(tmp_path / "repo"))
    settings = Settings(data_dirs={"mllm_judge_batch": root}, out=str(tmp_path / "card"), bootstrap=0, progress=False)
    card = judge_card(["mllm_judge_batch"], settings, judge=he)
    assert card.not_run == {} and len(judge.requests) == 9 * 2
    rows = card.rows
    assert _by(rows, "levenshtein")["value"] == pytest.approx(1 / 3) and _by(rows, "levenshtein")["n"] == 2
    assert _by(rows, "no_answer")["value"] == 0.0
    assert _by(rows, "position_bias")["value"] == pytest.approx(0.0, abs=1e-12)
    assert (_by(rows, "order_agreement")["value"], _by(rows, "order_agreement")["n"]) == (1.0, 9)
    [items] = (tmp_path / "card" / "runs").glob("*.items.jsonl")
    written = [json.loads(x) for x in items.read_text().splitlines()]
    assert [w["id"] for w in written[:3]] == ["mllm_judge-batch-0::0-1", "mllm_judge-batch-0::0-2",
                                              "mllm_judge-batch-0::0-3"]  # fmt: skip
    assert written[0]["question"].startswith("Please analyse this figure") and written[0]["image"].endswith("0.jpg")


def test_score_verdicts_correlate_with_the_human_score_by_pearson(tmp_path):
    """Five answers scored 1-5 by people, 2 1 4 3 5 by the judge: r = 8 / sqrt(10 · 10) = 0.8 (scipy agrees); a
    sixth without a verdict is no answer."""
    from scipy import stats

    root = tmp_path / "repo"
    write_mllm_judge(root)
    humans, judged = [1, 2, 3, 4, 5, 3], [2, 1, 4, 3, 5, None]
    records = [
        {"score_id": k, "name": "cogvlm", "answer": f"Answer {k}.", **mllmj_common(k % 3), "human": h}
        for k, h in enumerate(humans)
    ]
    write_jsonl(root / "Dataset" / "Benchmark" / "score.jsonl", records)
    verdicts = _write(tmp_path / "v.jsonl", [{"id": f"mllm_judge-score-{k}", "score": s} for k, s in enumerate(judged)])
    settings = Settings(data_dirs={"mllm_judge_score": str(root)}, verdicts={"mllm_judge_score": verdicts}, bootstrap=0)
    card = judge_card(["mllm_judge_score"], settings)
    pearson = _by(card.rows, "pearson")
    assert pearson["value"] == pytest.approx(0.8) and pearson["n"] == 5
    assert pearson["value"] == pytest.approx(stats.pearsonr(humans[:5], judged[:5]).statistic)
    assert (_by(card.rows, "no_answer")["value"], _by(card.rows, "no_answer")["n"]) == (pytest.approx(1 / 6), 6)


def test_the_dummy_judge_runs_the_score_and_batch_settings_end_to_end(tmp_path):
    """Plumbing (the dummy judge's numbers mean nothing): every answer rated with its question, every two answers of
    a ranked row compared, each figure there with its n."""
    root = str(write_mllm_judge(tmp_path / "repo"))
    out = tmp_path / "card"
    argv = ["judge-card", "--judge", "dummy", "--no-cache", "--benchmarks", "mllm_judge_score,mllm_judge_batch"]
    argv += ["--data-dir", f"mllm_judge_score={root}", "--data-dir", f"mllm_judge_batch={root}"]
    assert main([*argv, "--out", str(out), "--bootstrap", "20", "--quiet"]) == 0
    rows = json.loads((out / "card.json").read_text())
    score = [r for r in rows if r["benchmark"] == "mllm_judge_score"]
    batch = [r for r in rows if r["benchmark"] == "mllm_judge_batch"]
    assert _by(score, "no_answer")["n"] == 2 and _by(score, "samples_per_s")["n"] == 2
    assert _by(batch, "no_answer")["n"] == 2 and _by(batch, "samples_per_s")["n"] == 6 + 3
    assert 0.0 <= _by(batch, "levenshtein")["value"] <= 1.0
    rated = next(p for p in (out / "runs").glob("mllm_judge_score-*.items.jsonl"))
    assert all("question" in json.loads(x) for x in rated.read_text().splitlines())
