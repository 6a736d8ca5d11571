"""Score files as they come: failed items (null scores) left out figure by figure and counted, and files
keyed by (image, text) joined by content — each checked against a re-computation by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from mmjudge.cli import main
from mmjudge.human_judgments import HumanJudgments
from mmjudge.metaeval import MetaEvalResult, accuracy_table, criterion_table, meta_evaluate, read_scores
from mmjudge.metaeval.bootstrap import resample_counts, rng_for
from mmjudge.metaeval.scores import join_scores, scores_from_columns


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ------------------------------------------------------------------------------------ reading
def test_null_and_nan_are_failed_items_and_status_columns_are_ignored(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        [
            {"id": "a", "overall": 3.0, "fluency": 4.0, "fluency_status": "ok", "explanation": "fine"},
            {"id": "b", "overall": None, "fluency": None, "fluency_status": "no_rating", "explanation": None},
            {"id": "c", "overall": 2.0, "fluency": None, "fluency_status": "no_rating", "explanation": "short"},
        ],
    )
    table = read_scores(path)
    assert list(table["a"]) == ["overall", "fluency"]  # no status, no explanation column
    assert table["a"] == {"overall": 3.0, "fluency": 4.0}
    assert all(math.isnan(v) for v in table["b"].values()) and math.isnan(table["c"]["fluency"])
    csv_path = tmp_path / "s.csv"
    csv_path.write_text("id,score,score_status\na,0.5,ok\nb,,no_rating\nc,nan,no_rating\nd,NULL,\n")
    table = read_scores(csv_path)
    assert table["a"] == {"score": 0.5} and all(math.isnan(table[i]["score"]) for i in "bcd")
    csv_path.write_text("id,score\na,0.5\nb,-inf\n")
    with pytest.raises(ValueError, match=r"s.csv:3 \(id 'b'\) 'score': score is -inf \(inf is not a valid score"):
        read_scores(csv_path)
    write(path, [{"id": "a", "score": 1.0}, {"id": "b", "score": "n/a"}])
    with pytest.raises(ValueError, match=r"s.jsonl:2 \(id 'b'\): score 'score' is 'n/a', not a number"):
        read_scores(path)


def test_metric_output_with_none_is_failed_not_dropped():
    out = scores_from_columns(["a", "b"], {"overall": [0.5, None], "text": ["x", "y"]})
    assert out["a"] == {"overall": 0.5} and math.isnan(out["b"]["overall"])


# ------------------------------------------------------------------------------- failed items
def rated(n_items=12, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"i{k}" for k in range(n_items)]
    ratings = [
        {"id": i, "criterion": c, "score": float(rng.integers(1, 6)), "annotator": str(a)}
        for i in ids
        for c in ("overall", "fluency")
        for a in range(2)
    ]
    pairs = [
        {"better": ids[k], "worse": ids[k + 1], "kind": "mine", "category": "X" if k < 6 else "Y"}
        for k in range(0, n_items - 1, 2)
    ]
    return HumanJudgments(
        name="toy", items=[{"id": i} for i in ids], ratings=ratings, pairs=pairs, criteria=["overall", "fluency"]
    ), rng


def test_a_failed_item_leaves_only_the_figures_that_need_its_score():
    hj, rng = rated()
    scores = {i: {"overall": float(rng.random()), "fluency": float(rng.random())} for i in hj.ids()}
    scores["i0"]["overall"] = math.nan  # no overall score; fluency still has one
    scores["i3"] = {"overall": math.nan, "fluency": math.nan}
    result = meta_evaluate(hj, {"m": scores}, bootstrap=50, seed=1)
    # overall: i0 and i3 left out; the value is the correlation of what is left (naive re-computation)
    kept = [r for r in hj.ratings if r["criterion"] == "overall" and r["id"] not in ("i0", "i3")]
    expected = stats.kendalltau(
        [scores[r["id"]]["overall"] for r in kept], [r["score"] for r in kept], variant="c"
    ).statistic
    rec = result.find("m", measure="tau_c", criterion="overall")[0]
    assert rec["value"] == pytest.approx(expected) and (rec["n_failed"], rec["n_items"], rec["n_rows"]) == (2, 10, 20)
    assert rec["ci_low"] <= rec["value"] <= rec["ci_high"]
    # fluency: only i3 is missing there, i0 stays
    assert result.find("m", measure="tau_c", criterion="fluency")[0]["n_failed"] == 1
    # accuracy on the overall score: pairs (i0, i1) and (i2, i3) have a failed side and leave
    x = result.find("m", measure="accuracy", subset="X")[0]
    hand = [
        scores[p["better"]]["overall"] > scores[p["worse"]]["overall"]
        for p in hj.pairs[:3]
        if p["better"] not in ("i0",) and p["worse"] not in ("i3",)
    ]
    assert (x["n_pairs"], x["n_failed"]) == (1, 2) and x["value"] == pytest.approx(np.mean(hand))
    assert result.find("m", measure="accuracy", subset="Y")[0]["n_failed"] == 0
    assert result.coverage["m"]["failed"] == 2
    assert result.failure_lines() == ["m: 2 of 12 items had no score and were left out"]


def test_failed_items_keep_the_bootstrap_paired_with_other_metrics():
    hj, rng = rated(n_items=20, seed=3)
    base = {i: {"score": float(rng.random())} for i in hj.ids()}
    holey = {i: dict(v) for i, v in base.items()}
    holey["i5"]["score"] = math.nan
    result = meta_evaluate(hj, {"full": base, "holey": holey}, bootstrap=200, seed=0, measures=["tau_b"])
    # Same resampled items for both metrics: the holey metric's resample b is the full one's with i5's
    # rows weighted 0, so the two agree exactly on every resample that did not draw i5.
    key = dict(measure="tau_b", task="all", criterion="overall")
    rec = result.find("holey", **key)[0]
    assert rec["n_failed"] == 1 and result.find("full", **key)[0]["n_failed"] == 0
    figure = next(k for (k, name) in result.resamples if name == "holey" and dict(k)["criterion"] == "overall")
    full, holey = result.resamples[(figure, "full")], result.resamples[(figure, "holey")]
    drawn = resample_counts(20, 200, rng_for(0, "toy", "corr", "all", "overall", "per_judgment"))[:, 5] > 0
    assert 0 < (~drawn).sum() < 200
    np.testing.assert_allclose(full[~drawn], holey[~drawn])
    assert not np.allclose(full[drawn], holey[drawn])


def test_tables_and_saved_results_count_failed_items(tmp_path):
    hj, rng = rated()
    scores = {i: {"overall": float(rng.random())} for i in hj.ids()}
    scores["i4"]["overall"] = math.nan
    result = meta_evaluate(
        hj, {"m": scores, "ok": {i: {"overall": float(rng.random())} for i in hj.ids()}}, bootstrap=0
    )
    table = accuracy_table(result)
    assert "_m: 1 of 12 items had no score and were left out._" in table.markdown()
    assert table.csv().splitlines()[0].endswith(",n_failed") and table.csv().splitlines()[1].endswith(",1")
    assert table.to_dict()["rows"][1]["n_failed"] == 0
    assert "left out" in criterion_table(result).markdown()
    result.save(tmp_path / "r.json")
    again = MetaEvalResult.load(tmp_path / "r.json")
    assert again.failure_lines() == result.failure_lines() and again.coverage["ok"]["failed"] == 0


def test_cli_prints_the_failed_items_line_and_missing_ids_stay_an_error(tmp_path, capsys):
    hj, rng = rated()
    (tmp_path / "j.json").write_text(json.dumps(hj.to_dict()))
    rows = [{"id": i, "overall": float(rng.random()), "overall_status": "ok"} for i in hj.ids()]
    rows[2].update(overall=None, overall_status="no_rating")
    write(tmp_path / "he.jsonl", rows)
    assert (
        main(
            [
                "metaeval",
                "--judgments",
                str(tmp_path / "j.json"),
                "--scores",
                str(tmp_path / "he.jsonl"),
                "--bootstrap",
                "0",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "he: 1 of 12 items had no score and were left out" in out.splitlines()
    assert "n_failed" in (tmp_path / "o" / "records.csv").read_text().splitlines()[0]
    write(tmp_path / "he.jsonl", rows[:-1])
    assert main(["metaeval", "--judgments", str(tmp_path / "j.json"), "--scores", str(tmp_path / "he.jsonl")]) == 2
    assert "no score for 1 id(s) of the benchmark: 'i11'" in capsys.readouterr().err


# ------------------------------------------------------------------------------ joining by content
def pascal_like():
    """Pairs sharing captions, as Pascal-50S does: caption 'a dog' of img1 is in two pairs."""
    items = [
        {"id": "p1-a", "text": "a dog", "image_path": "JPEGImages/img1.jpg"},
        {"id": "p1-b", "text": "a cat", "image_path": "JPEGImages/img1.jpg"},
        {"id": "p2-a", "text": "A  dog", "image_path": "JPEGImages/img1.jpg"},
        {"id": "p2-b", "text": "a bird", "image_path": "JPEGImages/img1.jpg"},
        {"id": "p3-a", "text": "a room", "image_path": "JPEGImages/img2.jpg"},
        {"id": "p3-b", "text": "a room", "image_path": "JPEGImages/img2.jpg"},
    ]
    pairs = [{"better": f"p{k}-a", "worse": f"p{k}-b", "kind": "pascal50s", "category": "HC"} for k in (1, 2, 3)]
    return HumanJudgments(name="pas", items=items, pairs=pairs, correlation="accuracy")


def test_content_join_rule(tmp_path):
    hj = pascal_like()
    rows = [
        {"image": "VOC2012/JPEGImages/img1.jpg", "caption": "a dog", "score": 0.9},  # one row, two items
        {"image": "VOC2012/JPEGImages/img1.jpg", "caption": "a cat", "score": 0.1},
        {"image": "VOC2012/JPEGImages/img1.jpg", "caption": "A bird", "score": 0.95},
        {"image": "img2.jpg", "caption": "a room", "score": 0.3},  # two rows, two items:
        {"image": "img2.jpg", "caption": "a room", "score": 0.2},  # matched in order
        {"image": "img9.jpg", "caption": "not in the benchmark", "score": 0.5},
    ]
    table = join_scores(read_scores(write(tmp_path / "f.jsonl", rows)), hj, "fleur")
    assert {i: v["score"] for i, v in table.items()} == {
        "p1-a": 0.9,
        "p1-b": 0.1,
        "p2-a": 0.9,
        "p2-b": 0.95,
        "p3-a": 0.3,
        "p3-b": 0.2,
    }
    assert table.join == {"by": "content", "items": 6, "joined": 6, "unjoined_rows": 1}
    result = meta_evaluate(hj, {"fleur": read_scores(tmp_path / "f.jsonl")}, bootstrap=0)  # Python API joins too
    assert result.value("fleur", subset="HC") == pytest.approx(2 / 3) and result.coverage["fleur"]["by"] == "content"
    # three rows with different scores for a key two items share: which is which cannot be told
    write(tmp_path / "g.jsonl", rows + [{"image": "img2.jpg", "caption": "a room", "score": 0.7}])
    with pytest.raises(ValueError, match=r"g.jsonl:4: 3 rows with different scores for image 'img2.jpg'.*ambiguous"):
        join_scores(read_scores(tmp_path / "g.jsonl"), hj, "fleur")
    # an item without a row is an error, as a missing id is
    write(tmp_path / "h.jsonl", rows[1:])
    with pytest.raises(
        ValueError, match=r"joined by \(image, text\), 4 of 6 items of pas found a row, but 2 did not: 'p1-a', 'p2-a'"
    ):
        join_scores(read_scores(tmp_path / "h.jsonl"), hj, "fleur")


def test_content_join_through_the_cli_prints_the_counts(tmp_path, capsys):
    hj = pascal_like()
    (tmp_path / "j.json").write_text(json.dumps(hj.to_dict()))
    path = tmp_path / "fleur.csv"
    path.write_text(
        "image,caption,score\nimg1.jpg,a dog,0.9\nimg1.jpg,a cat,0.1\nimg1.jpg,a bird,0.2\n"
        "img2.jpg,a room,0.3\nimg2.jpg,a room,0.2\nx.jpg,extra,1\n"
    )
    assert main(["metaeval", "--judgments", str(tmp_path / "j.json"), "--scores", str(path), "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    assert "fleur: joined by (image, text): 6 of 6 items; 1 row(s) of the file matched no item" in out
    assert "| fleur | 100.0 |" in out


def test_rows_without_id_or_content_are_one_clear_error(tmp_path):
    write(tmp_path / "s.jsonl", [{"image": "a.jpg", "score": 1.0}])
    with pytest.raises(ValueError, match=r"s.jsonl:1: the row has no 'id' \(nor an image and a text"):
        read_scores(tmp_path / "s.jsonl")
    write(tmp_path / "s.jsonl", [{"id": "a", "score": 1.0}, {"image": "a.jpg", "text": "x", "score": 1.0}])
    with pytest.raises(ValueError, match=r"s.jsonl:2: the row has no 'id' \(the other rows"):
        read_scores(tmp_path / "s.jsonl")
    hj = HumanJudgments(name="t", items=[{"id": "a", "text": "x"}], pairs=[])
    write(tmp_path / "s.jsonl", [{"image": "a.jpg", "text": "x", "score": 1.0}])
    with pytest.raises(ValueError, match=r"1 item\(s\) of t have no image name and text to join on: 'a'"):
        join_scores(read_scores(tmp_path / "s.jsonl"), hj, "m")
