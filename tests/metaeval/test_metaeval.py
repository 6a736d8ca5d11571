"""Meta-evaluation math: correlations against naive re-computations, pair accuracy, bootstrap, inputs."""

from __future__ import annotations

import importlib
import itertools
import json
import math

import numpy as np
import pytest
from scipy import stats

from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval import (
    MetaEvalResult,
    UndefinedCorrelationWarning,
    accuracy_table,
    benchmark_table,
    check_scores,
    correlation,
    criterion_table,
    heatmap,
    meta_evaluate,
    pair_outcomes,
    pairs_from_choices,
    read_scores,
    write_outputs,
)
from mmjudge.metaeval.bootstrap import resample_counts, rng_for
from mmjudge.metaeval.correlation import correlation_batch

correlation_module = importlib.import_module("mmjudge.metaeval.correlation")

CRITERIA = ["correctness", "completeness", "clarity", "fluency", "conciseness"]


# ------------------------------------------------------------------------ naive references
def naive_kendall(x, y, variant):
    """O(n²) Kendall τ-b / τ-c straight from the definitions (concordant, discordant, ties)."""
    n = len(x)
    con = dis = ties_x = ties_y = 0
    for i, j in itertools.combinations(range(n), 2):
        dx, dy = x[i] - x[j], y[i] - y[j]
        if dx == 0:
            ties_x += 1
        if dy == 0:
            ties_y += 1
        if dx * dy > 0:
            con += 1
        elif dx * dy < 0:
            dis += 1
    pairs = n * (n - 1) / 2
    if variant == "b":
        return (con - dis) / math.sqrt((pairs - ties_x) * (pairs - ties_y))
    m = min(len(set(x)), len(set(y)))
    return 2 * (con - dis) / (n * n * (m - 1) / m)


def naive_pearson(x, y):
    mx, my = sum(x) / len(x), sum(y) / len(y)
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))


def naive_ranks(v):
    return [sum(1 for w in v if w < a) + (sum(1 for w in v if w == a) + 1) / 2 for a in v]


HAND_X = [0.1, 0.4, 0.4, 0.9, 0.3, 0.7, 0.7, 0.2]
HAND_Y = [1, 3, 2, 5, 2, 4, 5, 1]


@pytest.mark.parametrize("variant", ["b", "c"])
def test_kendall_matches_naive_definition_with_ties(variant):
    expected = naive_kendall(HAND_X, HAND_Y, variant)
    assert correlation(HAND_X, HAND_Y, f"tau_{variant}") == pytest.approx(expected, abs=1e-12)


def test_tau_b_and_tau_c_differ_on_a_non_square_table():
    # 3 distinct metric values vs 2 human values: τ-c ≠ τ-b, both match the definitions.
    x, y = [1, 2, 3, 1, 2, 3], [0, 0, 1, 0, 1, 1]
    tau_b, tau_c = correlation(x, y, "tau_b"), correlation(x, y, "tau_c")
    assert tau_b == pytest.approx(naive_kendall(x, y, "b")) and tau_c == pytest.approx(naive_kendall(x, y, "c"))
    assert tau_b != pytest.approx(tau_c)


def test_hand_computed_tau_value():
    # 6 pairs: 5 concordant, 1 discordant, no ties → (5 − 1) / 6.
    assert correlation([1, 2, 3, 4], [1, 3, 2, 4], "tau_b") == pytest.approx(4 / 6)
    # τ-c with m = 4: 2·4 / (16·3/4) = 2/3 as well.
    assert correlation([1, 2, 3, 4], [1, 3, 2, 4], "tau_c") == pytest.approx(2 / 3)


def test_pearson_and_spearman_match_naive():
    assert correlation(HAND_X, HAND_Y, "pearson") == pytest.approx(naive_pearson(HAND_X, HAND_Y))
    assert correlation(HAND_X, HAND_Y, "spearman") == pytest.approx(
        naive_pearson(naive_ranks(HAND_X), naive_ranks(HAND_Y))
    )


@pytest.mark.parametrize(
    "x,y,why",
    [
        ([0.5] * 4, [1, 2, 3, 4], "metric scores are constant"),
        ([1, 2, 3, 4], [3] * 4, "human scores are constant"),
        ([1.0], [2.0], "only 1 row"),
    ],
)
@pytest.mark.parametrize("measure", ["tau_b", "tau_c", "pearson", "spearman"])
def test_undefined_correlation_is_nan_with_warning(x, y, why, measure):
    with pytest.warns(UndefinedCorrelationWarning, match=why):
        assert math.isnan(correlation(x, y, measure, where="toy"))


def test_correlation_bad_input():
    with pytest.raises(ValueError, match="NaN or inf at position 1"):
        correlation([1, float("nan"), 2], [1, 2, 3])
    with pytest.raises(ValueError, match="equal length"):
        correlation([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="`measure`"):
        correlation([1, 2], [1, 2], "kendall")


@pytest.mark.parametrize("force_loop", [False, True])
def test_batched_resamples_equal_scipy_on_expanded_data(force_loop, monkeypatch):
    if force_loop:
        monkeypatch.setattr(correlation_module, "BATCH_KENDALL_MAX_ROWS", 0)
    rng = np.random.default_rng(3)
    x = np.round(rng.random(40), 1)  # many ties
    y = rng.integers(1, 6, 40).astype(float)
    weights = rng.multinomial(40, np.full(40, 1 / 40), size=25)
    weights[0] = 0
    weights[0, :3] = [5, 0, 0]  # a resample of one repeated row: undefined
    batch = correlation_batch(x, y, weights, ["tau_b", "tau_c", "pearson", "spearman"])
    for b in range(25):
        xb, yb = np.repeat(x, weights[b]), np.repeat(y, weights[b])
        if b == 0:
            assert all(math.isnan(batch[m][0]) for m in batch)
            continue
        assert batch["tau_b"][b] == pytest.approx(stats.kendalltau(xb, yb, variant="b").statistic, abs=1e-12)
        assert batch["tau_c"][b] == pytest.approx(stats.kendalltau(xb, yb, variant="c").statistic, abs=1e-12)
        assert batch["pearson"][b] == pytest.approx(stats.pearsonr(xb, yb).statistic, abs=1e-12)
        assert batch["spearman"][b] == pytest.approx(stats.spearmanr(xb, yb).statistic, abs=1e-12)


# ----------------------------------------------------------------------------- pairwise
def _triplet(group, bests, task="ic"):
    return [
        {"group": group, "task": task, "candidates": ["a", "b", "c"], "annotator": str(k), "best": best}
        for k, best in enumerate(bests)
    ]


def test_best_of_three_options():
    choices = _triplet("g1", ["a", "a", "b"]) + _triplet("g2", ["a", "b", "c"]) + _triplet("g3", ["c", "c", "c"])
    majority = [(p["group"], p["better"], p["worse"]) for p in pairs_from_choices(choices, "majority")]
    assert majority == [("g1", "a", "b"), ("g1", "a", "c"), ("g3", "c", "a"), ("g3", "c", "b")]  # g2 skipped
    unanimous = [(p["group"], p["better"], p["worse"]) for p in pairs_from_choices(choices, "unanimous")]
    assert unanimous == [("g3", "c", "a"), ("g3", "c", "b")]
    per_annotator = pairs_from_choices(choices, "per_annotator")
    assert len(per_annotator) == 18
    assert [(p["better"], p["worse"]) for p in per_annotator[:6]] == [
        ("a", "b"),
        ("a", "c"),
        ("a", "b"),
        ("a", "c"),
        ("b", "a"),
        ("b", "c"),
    ]


def test_best_of_bad_input():
    with pytest.raises(ValueError, match="best_of"):
        pairs_from_choices(_triplet("g", "aaa"), "plurality")
    bad = _triplet("g", "aab")
    bad[2]["best"] = "z"
    with pytest.raises(ValueError, match="'z' is not one of"):
        pairs_from_choices(bad)
    twice = _triplet("g", "aab")
    twice[1]["annotator"] = "0"
    with pytest.raises(ValueError, match="chose more than once"):
        pairs_from_choices(twice)


def test_pair_outcomes_ties():
    scores = {"a": 1.0, "b": 1.0, "c": 0.0}
    pairs = [("a", "b"), ("a", "c"), ("c", "a")]
    assert pair_outcomes(pairs, scores).tolist() == [0.0, 1.0, 0.0]
    assert pair_outcomes(pairs, scores, ties="half").tolist() == [0.5, 1.0, 0.0]
    with pytest.raises(ValueError, match="no score for id 'zz'"):
        pair_outcomes([("a", "zz")], scores)
    with pytest.raises(ValueError, match="`ties`"):
        pair_outcomes(pairs, scores, ties="right")


# ------------------------------------------------------------------- a small MMHE-like benchmark
def mmhe_like(n_instances=12, tasks=("reg", "vqa", "vdu", "ic"), seed=0):
    rng = np.random.default_rng(seed)
    items, ratings, choices = [], [], []
    quality = {}
    for task in tasks:
        for i in range(n_instances):
            cands = [f"{task}-{i}-{k}" for k in range(3)]
            for cid in cands:
                quality[cid] = rng.random()
                items.append({"id": cid, "task": task, "text": f"text {cid}"})
                for c in CRITERIA:
                    for a in range(3):
                        score = float(np.clip(round(1 + 4 * quality[cid] + rng.normal(0, 0.8)), 1, 5))
                        ratings.append({"id": cid, "task": task, "criterion": c, "score": score, "annotator": str(a)})
            best = max(cands, key=quality.get)
            for a in range(3):
                pick = best if rng.random() < 0.75 else cands[rng.integers(3)]
                choices.append(
                    {"group": f"{task}-{i}", "task": task, "candidates": cands, "annotator": str(a), "best": pick}
                )
    hj = HumanJudgments(
        name="mmhe_toy", items=items, ratings=ratings, choices=choices, criteria=CRITERIA, correlation="tau_b"
    )
    return hj, quality


def metric_scores(quality, noise, seed):
    rng = np.random.default_rng(seed)
    return {i: {"score": float(q + rng.normal(0, noise))} for i, q in quality.items()}


def test_meta_evaluate_correlations_follow_the_protocols():
    hj, quality = mmhe_like(n_instances=5)
    scores = {"m": metric_scores(quality, 0.2, 1)}
    per_judgment = meta_evaluate(hj, scores, bootstrap=0, protocol="per_judgment")
    averaged = meta_evaluate(hj, scores, bootstrap=0, protocol="averaged")
    rows = [r for r in hj.ratings if r["task"] == "vqa" and r["criterion"] == "fluency"]
    x = [scores["m"][r["id"]]["score"] for r in rows]  # the item's score repeated per judgment
    y = [r["score"] for r in rows]
    assert len(rows) == 45
    assert per_judgment.value("m", measure="tau_c", task="vqa", criterion="fluency") == pytest.approx(
        naive_kendall(x, y, "c")
    )
    assert per_judgment.value("m", measure="tau_b", task="vqa", criterion="fluency") == pytest.approx(
        naive_kendall(x, y, "b")
    )
    ids = list(dict.fromkeys(r["id"] for r in rows))
    mean_y = [np.mean([r["score"] for r in rows if r["id"] == i]) for i in ids]
    xs = [scores["m"][i]["score"] for i in ids]
    assert averaged.value("m", measure="tau_b", task="vqa", criterion="fluency") == pytest.approx(
        naive_kendall(xs, mean_y, "b")
    )
    assert averaged.value("m", measure="pearson", task="vqa", criterion="fluency") == pytest.approx(
        naive_pearson(xs, mean_y)
    )
    record = per_judgment.find("m", measure="tau_b", task="vqa", criterion="fluency")[0]
    assert (record["n_rows"], record["n_items"], record["protocol"]) == (45, 15, "per_judgment")
    # "all" pools every task
    assert per_judgment.find("m", measure="tau_b", task="all", criterion="fluency")[0]["n_rows"] == 180


def test_meta_evaluate_accuracy_matches_hand_count():
    hj, quality = mmhe_like(n_instances=6)
    scores = {"m": metric_scores(quality, 0.3, 2)}
    result = meta_evaluate(hj, scores, bootstrap=0, best_of="majority", ties="wrong")
    pairs = pairs_from_choices(hj.choices, "majority")
    accs = []
    for task in ("reg", "vqa", "vdu", "ic"):
        mine = [p for p in pairs if p["task"] == task]
        correct = sum(scores["m"][p["better"]]["score"] > scores["m"][p["worse"]]["score"] for p in mine)
        accs.append(correct / len(mine))
        assert result.value("m", measure="accuracy", kind="best_of_n", subset=task) == pytest.approx(accs[-1])
    assert result.value("m", measure="accuracy", subset="avg") == pytest.approx(np.mean(accs))
    assert result.headline("m")["subset"] == "avg"


def test_ties_option_changes_accuracy_by_half_per_tie():
    hj = HumanJudgments(
        name="p",
        items=[{"id": i} for i in "abcd"],
        pairs=[
            {"better": "a", "worse": "b", "kind": "pascal50s", "category": "HC"},
            {"better": "c", "worse": "d", "kind": "pascal50s", "category": "HI"},
        ],
    )
    scores = {"m": {"a": {"score": 1.0}, "b": {"score": 1.0}, "c": {"score": 2.0}, "d": {"score": 1.0}}}
    wrong = meta_evaluate(hj, scores, bootstrap=0)
    half = meta_evaluate(hj, scores, bootstrap=0, ties="half")
    assert wrong.value("m", subset="HC") == 0.0 and half.value("m", subset="HC") == 0.5
    assert wrong.value("m", subset="avg") == 0.5 and half.value("m", subset="avg") == 0.75


def test_constant_metric_gives_documented_nan_not_a_crash():
    hj, quality = mmhe_like(n_instances=3, tasks=("ic",))
    scores = {"flat": {i: {"score": 0.5} for i in quality}}
    with pytest.warns(UndefinedCorrelationWarning, match="metric scores are constant"):
        result = meta_evaluate(hj, scores, bootstrap=20)
    record = result.find("flat", measure="tau_c", task="ic", criterion="fluency")[0]
    assert math.isnan(record["value"]) and math.isnan(record["ci_low"])
    assert result.value("flat", measure="accuracy", subset="ic") == 0.0  # all ties are wrong
    assert "–" in criterion_table(result).markdown()


def test_criterion_wise_metrics_use_their_own_columns():
    hj, quality = mmhe_like(n_instances=4, tasks=("ic",))
    rng = np.random.default_rng(5)
    scores = {i: {"overall": q, **{c: float(rng.random()) for c in CRITERIA}} for i, q in quality.items()}
    matched = meta_evaluate(hj, {"he": scores}, bootstrap=0)
    overall_only = meta_evaluate(hj, {"he": scores}, bootstrap=0, criterion_scores=False)
    rec = matched.find("he", measure="tau_b", task="ic", criterion="clarity")[0]
    assert rec["score_key"] == "clarity"
    assert overall_only.find("he", measure="tau_b", task="ic", criterion="clarity")[0]["score_key"] == "overall"
    rows = [r for r in hj.ratings if r["criterion"] == "clarity"]
    expected = naive_kendall([scores[r["id"]]["clarity"] for r in rows], [r["score"] for r in rows], "b")
    assert rec["value"] == pytest.approx(expected)


# ----------------------------------------------------------------------------- bootstrap
def test_bootstrap_is_seeded_paired_and_matches_a_naive_loop():
    hj, quality = mmhe_like(n_instances=8, tasks=("ic",))
    scores = {"a": metric_scores(quality, 0.2, 1), "b": metric_scores(quality, 0.2, 1)}  # identical metrics
    one = meta_evaluate(hj, scores, bootstrap=200, seed=7)
    two = meta_evaluate(hj, scores, bootstrap=200, seed=7)
    other = meta_evaluate(hj, scores, bootstrap=200, seed=8)
    key = dict(measure="tau_c", task="ic", criterion="correctness")
    rec = one.find("a", **key)[0]
    assert rec == two.find("a", **key)[0]
    assert rec["ci_low"] != other.find("a", **key)[0]["ci_low"]
    assert rec["ci_low"] < rec["value"] < rec["ci_high"]
    # Same resamples for every metric: identical metrics differ by exactly 0 in every resample.
    cmp = one.compare("a", "b", **key)
    assert cmp["difference"] == 0 and cmp["ci_low"] == 0 and cmp["ci_high"] == 0
    # The accuracy interval equals a naive loop over the same resampled triplets.
    pairs = [p for p in pairs_from_choices(hj.choices) if p["task"] == "ic"]
    groups = list(dict.fromkeys(p["group"] for p in pairs))
    counts = resample_counts(len(groups), 200, rng_for(7, hj.name, "acc", "best_of_n", "ic"))
    accs = []
    for row in counts:
        hits = total = 0
        for g, c in zip(groups, row):
            for p in (p for p in pairs if p["group"] == g):
                total += c
                hits += c * (scores["a"][p["better"]]["score"] > scores["a"][p["worse"]]["score"])
        accs.append(hits / total)
    acc = one.find("a", measure="accuracy", subset="ic")[0]
    assert (acc["ci_low"], acc["ci_high"]) == pytest.approx(tuple(np.quantile(accs, [0.025, 0.975])))


def test_bootstrap_separates_a_good_from_a_bad_metric():
    hj, quality = mmhe_like(n_instances=30, tasks=("ic",))
    scores = {
        "good": metric_scores(quality, 0.05, 1),
        "noise": {i: {"score": float(v)} for i, v in zip(quality, np.random.default_rng(9).random(len(quality)))},
    }
    result = meta_evaluate(hj, scores, bootstrap=300, seed=0, measures=["tau_c"])
    cmp = result.compare("good", "noise", measure="tau_c", task="ic", criterion="correctness")
    assert cmp["ci_low"] > 0 and cmp["share_b_not_worse"] == 0.0


# ------------------------------------------------------------------------------ score files
def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_read_scores_jsonl_and_csv(tmp_path):
    jsonl = write_jsonl(
        tmp_path / "s.jsonl",
        [{"id": "a", "overall": 1, "fluency": 2.5, "text": "x"}, {"id": 7, "overall": 2, "fluency": 3}],
    )
    assert read_scores(jsonl) == {"a": {"overall": 1.0, "fluency": 2.5}, "7": {"overall": 2.0, "fluency": 3.0}}
    csv_path = tmp_path / "s.csv"
    csv_path.write_text("id,score,text\na,0.5,hello\nb,1e-1,world\n")
    assert read_scores(csv_path) == {"a": {"score": 0.5}, "b": {"score": 0.1}}


@pytest.mark.parametrize(
    "rows,match",
    [
        # NaN / null is a failed item now (tests below); inf stays an error.
        ([{"id": "a", "score": float("inf")}], r"s.jsonl:1 \(id 'a'\) 'score': score is inf"),
        ([{"id": "a", "score": 1}, {"id": "a", "score": 2}], "s.jsonl:2: duplicate id 'a'"),
        ([{"score": 1}], "s.jsonl:1: the row has no 'id'"),
        ([{"id": "a", "score": 1}, {"id": "b", "score": "high"}], r"id 'b'\): score 'score' is 'high'"),
        ([{"id": "a", "score": 1}, {"id": "b"}], r"id 'b'\): missing score 'score'"),
        ([{"id": "a", "text": "no numbers"}], "no numeric score column"),
    ],
)
def test_read_scores_errors_name_the_row(tmp_path, rows, match):
    path = tmp_path / "s.jsonl"
    path.write_text(
        "".join(json.dumps(r) if not isinstance(r, str) else r for r in rows) + "\n"
        if len(rows) == 1
        else "".join(json.dumps(r) + "\n" for r in rows)
    )
    with pytest.raises(ValueError, match=match):
        read_scores(path)


def test_read_scores_csv_errors(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("id,score\na,0.5\nb,inf\n")
    with pytest.raises(ValueError, match=r"s.csv:3 \(id 'b'\) 'score': score is inf"):
        read_scores(path)
    path.write_text("id,score\na,0.5\nb,oops\n")
    with pytest.raises(ValueError, match=r"s.csv:3 \(id 'b'\): column 'score' holds 'oops'"):
        read_scores(path)
    with pytest.raises(ValueError, match="does not exist"):
        read_scores(tmp_path / "nope.jsonl")


def test_check_scores_names_missing_and_unknown_ids():
    scores = {"a": {"score": 1.0}, "x": {"score": 1.0}, "y": {"score": 2.0}}
    with pytest.raises(ValueError, match=r"m: no score for 2 id\(s\) of the benchmark: 'b', 'c'"):
        check_scores(scores, ["a", "b", "c", "x", "y"][:3], "m")
    with pytest.raises(ValueError, match=r"m: 2 id\(s\) are not in the benchmark: 'x', 'y'"):
        check_scores(scores, ["a"], "m")
    with pytest.raises(ValueError, match="score is inf"):
        check_scores({"a": {"score": math.inf}}, ["a"], "m")


def test_meta_evaluate_rejects_bad_input_before_computing():
    hj, quality = mmhe_like(n_instances=2, tasks=("ic",))
    good = metric_scores(quality, 0.1, 0)
    with pytest.raises(ValueError, match="`protocol`"):
        meta_evaluate(hj, {"m": good}, protocol="mean")
    with pytest.raises(ValueError, match="`bootstrap`"):
        meta_evaluate(hj, {"m": good}, bootstrap=-1)
    with pytest.raises(ValueError, match="at least one metric"):
        meta_evaluate(hj, {})
    missing = dict(good)
    missing.pop("ic-0-0")
    with pytest.raises(ValueError, match="m: no score for 1 id.*'ic-0-0'"):
        meta_evaluate(hj, {"m": missing})
    bad = HumanJudgments(name="b", items=hj.items, ratings=[{"id": "ghost", "criterion": "overall", "score": 1.0}])
    with pytest.raises(ValueError, match="rating 0 names unknown item id 'ghost'"):
        meta_evaluate(bad, {"m": good})
    bad = HumanJudgments(
        name="b", items=hj.items, ratings=[{"id": "ic-0-0", "criterion": "overall", "score": math.nan}]
    )
    with pytest.raises(ValueError, match="not a finite number"):
        meta_evaluate(bad, {"m": good})
    bad = HumanJudgments(name="b", items=hj.items, pairs=[{"better": "ic-0-0", "worse": "nobody", "kind": "foil"}])
    with pytest.raises(ValueError, match="pair 0 names unknown item id 'nobody'"):
        meta_evaluate(bad, {"m": good})


# ---------------------------------------------------------------------------------- tables
def test_tables_have_the_papers_shapes(tmp_path):
    hj, quality = mmhe_like(n_instances=6)
    scores = {"A": metric_scores(quality, 0.1, 1), "B": metric_scores(quality, 0.5, 2)}
    result = meta_evaluate(hj, scores, bootstrap=50, seed=0)
    table2 = accuracy_table(result)
    assert [c for _, c in table2.columns] == ["REG", "VQA", "VDU", "IC", "Avg."]
    assert table2.rows["A"][-1].value == pytest.approx(np.mean([c.value for c in table2.rows["A"][:4]]))
    table3 = criterion_table(result)
    assert len(table3.columns) == 20 and table3.columns[0] == ("REG", "Crt") and table3.columns[-1] == ("IC", "Cnc")
    for cells in table3.rows.values():
        for t in range(4):
            block = cells[5 * t : 5 * t + 5]
            assert [c.mark for c in block].count("↑") == 1 and [c.mark for c in block].count("↓") == 1
            assert next(c for c in block if c.mark == "↑").value == max(c.value for c in block)
    md = table3.markdown()
    assert "| Metric | REG Crt | REG Cmp |" in md and "↑" in md and "**" in md
    # CSV: one value and interval triple per column
    header = table3.csv().splitlines()[0].split(",")
    assert header[:5] == ["metric", "REG Crt", "REG Crt_ci_low", "REG Crt_ci_high", "REG Crt_mark"]
    # Table 8 across benchmarks
    f8k = HumanJudgments(
        name="flickr8k_expert",
        items=[{"id": i} for i in quality],
        correlation="tau_c",
        ratings=[{"id": i, "criterion": "overall", "score": 1 + round(3 * q)} for i, q in quality.items()],
    )
    f8k_result = meta_evaluate(f8k, scores, bootstrap=0)
    table8 = benchmark_table([result, f8k_result])
    assert table8.columns == [("mmhe_toy", "acc."), ("flickr8k_expert", "τ_c")]
    assert table8.rows["A"][1].value == pytest.approx(100 * f8k_result.value("A", measure="tau_c", criterion="overall"))


def test_write_outputs_and_reload(tmp_path):
    hj, quality = mmhe_like(n_instances=4)
    scores = {"A": metric_scores(quality, 0.1, 1), "B": metric_scores(quality, 0.5, 2)}
    result = meta_evaluate(hj, scores, bootstrap=30, seed=0)
    markdown, written = write_outputs([result], tmp_path / "out")
    names = sorted(p.name for p in written)
    assert names == sorted(
        [
            "accuracy.md",
            "accuracy.csv",
            "accuracy.json",
            "criterion_correlation.md",
            "criterion_correlation.csv",
            "criterion_correlation.json",
            "benchmarks.md",
            "benchmarks.csv",
            "benchmarks.json",
            "records.csv",
            "results.json",
            "heatmap.png",
        ]
    )
    assert "Pairwise accuracy" in markdown and "Kendall τ_b" in markdown
    table = json.loads((tmp_path / "out" / "accuracy.json").read_text())
    assert [c["label"] for c in table["columns"]] == ["REG", "VQA", "VDU", "IC", "Avg."]
    assert table["rows"][0]["cells"][0]["ci_low"] <= table["rows"][0]["cells"][0]["value"]
    reloaded = MetaEvalResult.load(tmp_path / "out" / "results.json")
    assert reloaded.records == result.records
    from PIL import Image

    with Image.open(tmp_path / "out" / "heatmap.png") as png:
        assert png.format == "PNG" and png.size[0] > 300


def test_heatmap_without_correlations_returns_none(tmp_path):
    hj = HumanJudgments(
        name="p", items=[{"id": "a"}, {"id": "b"}], pairs=[{"better": "a", "worse": "b", "kind": "foil"}]
    )
    result = meta_evaluate(hj, {"m": {"a": {"score": 1.0}, "b": {"score": 0.0}}}, bootstrap=0)
    assert heatmap(result, tmp_path / "h.png") is None
    assert result.headline("m")["value"] == 1.0


def test_pairs_per_criterion_use_the_metrics_criterion_column():
    # Humans prefer a over b overall, but b over a on fluency; the metric agrees on both only if each
    # criterion's pairs are judged on its own column.
    hj = HumanJudgments(
        name="study",
        items=[{"id": i} for i in "abcd"],
        pairs=[
            {"better": "a", "worse": "b", "kind": "pref"},
            {"better": "c", "worse": "d", "kind": "pref"},
            {"better": "b", "worse": "a", "kind": "pref", "criterion": "fluency"},
            {"better": "d", "worse": "c", "kind": "pref", "criterion": "fluency"},
        ],
    )
    scores = {
        "he": {
            "a": {"overall": 4.0, "fluency": 2.0},
            "b": {"overall": 1.0, "fluency": 5.0},
            "c": {"overall": 3.0, "fluency": 3.0},
            "d": {"overall": 2.0, "fluency": 1.0},
        }
    }
    result = meta_evaluate(hj, scores, bootstrap=0)
    assert result.value("he", criterion="overall", subset="all") == 1.0
    fluency = result.find("he", criterion="fluency", subset="all")[0]
    assert (fluency["value"], fluency["score_key"], fluency["n_pairs"]) == (0.5, "fluency", 2)
    assert result.headline("he")["criterion"] == "overall"
    table = accuracy_table(result)
    assert table.columns == [("Overall", "All"), ("Flu", "All")]
    assert [c.value for c in table.rows["he"]] == [100.0, 50.0]
    # best-of-N choices may carry a criterion too
    choices = [
        {"group": "g", "candidates": ["a", "b"], "annotator": "1", "best": "b", "criterion": "fluency"},
        {"group": "g", "candidates": ["a", "b"], "annotator": "1", "best": "a"},
    ]
    assert [(p["criterion"], p["better"]) for p in pairs_from_choices(choices)] == [("fluency", "b"), ("overall", "a")]
