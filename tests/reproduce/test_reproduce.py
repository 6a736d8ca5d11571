"""``mmjudge reproduce``: the tables as data, the dry run, cells recomputed and compared, the cache and resume.

Runs here on fixtures we write (the synthetic Flickr8k-Expert fixture, a LongCap-Arena-shaped Parquet set):
their "published" numbers are the papers', so the synthetic cells land ✓ or ✗ by chance; what is asserted is
that each figure equals an independent computation (scipy's Kendall τ on the per-item scores, one row per
human judgment) and that the status follows the rule. The papers' own numbers are checked on the real files
when ``MMJUDGE_FLICKR8K_DIR`` / ``MMJUDGE_PASCAL50S_DIR`` name folders that hold them (FLEUR's repository's
``annotations/`` and ``results/``)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import mmjudge.reproduce.run as run_module
from mmjudge.cli import main
from mmjudge.reproduce import FIELDS, CellResult, Settings, load_tables, plan, reproduce
from mmjudge.reproduce.output import cell_text, csv_text, markdown
from repo_paths import FIXTURES

FIXTURE = FIXTURES / "flickr8k_expert"
FAST = dict(bootstrap=200, progress=False)
# The catalogue's reason for TIGEr (what is missing: the SCAN model and the region features, named in full).
TIGER = "TIGEr is not in mmjudge: it needs the authors' trained SCAN model (runs/coco_scan/log/model_best.pth)"


class Killed(BaseException):
    """What a killed process leaves: nothing after the point it stopped (not an error a cell catches)."""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """The judge cache, and the computed per-item scores beside it, in this test's folder."""
    monkeypatch.setenv("MMJUDGE_CACHE", str(tmp_path / "judge.sqlite"))


def settings(tmp_path, **kw) -> Settings:
    base = dict(
        data_dirs={"flickr8k_expert": str(FIXTURE)},
        dataset_options={"flickr8k_expert": {"expected_counts": {}, "cache_dir": str(tmp_path / "hf")}},
        out=str(tmp_path / "out"),
        **FAST,
    )
    base.update(kw)
    return Settings(**base)


def scipy_tau(scores_by_id: dict, judgments, variant="c", criterion="overall") -> float:
    """Kendall τ over one row per human judgment (a caption's score repeated), scipy's, ×100."""
    rows = [r for r in judgments.ratings if r.get("criterion", "overall") == criterion]
    metric = [scores_by_id[r["id"]] for r in rows]
    human = [r["score"] for r in rows]
    return 100 * scipy.stats.kendalltau(metric, human, variant=variant)[0]


def fixture_judgments(tmp_path):
    from mmjudge.datasets import human_judgments

    return human_judgments(
        "flickr8k_expert", data_dir=str(FIXTURE), expected_counts={}, cache_dir=str(tmp_path / "hf-check")
    )


# --- the tables as data ---------------------------------------------------------------------------
def test_every_table_cell_has_a_measure_a_number_and_a_source():
    tables = load_tables()
    counts = {name: sum(1 for _ in t.cells()) for name, t in tables.items()}
    assert counts == {"beyond_1": 17, "fleur_1": 6, "harmonic_eval_8": 84, "harmonic_eval_9": 10, "vela_1": 120}
    by = {(c.table, c.row.key, c.column.key): c for t in tables.values() for c in t.cells()}
    # Spot checks against the papers (HarmonicEval Tables 8, 9; VELA Table 1; FLEUR Table 1).
    assert by[("harmonic_eval_8", "meteor", "f_ex")].published == 41.8
    assert by[("harmonic_eval_8", "gpt_fleur", "pas")].published == 82.6
    assert by[("harmonic_eval_8", "polos", "f_cf")].measure == "tau_b"
    assert ("harmonic_eval_8", "tiger", "f_cf") not in by  # "–" in the paper
    assert (
        by[("beyond_1", "expert", "nebula")].published == 54.9 and by[("beyond_1", "expert", "com")].measure == "tau_c"
    )
    assert by[("harmonic_eval_9", "polos", "ref1")].published == 93.3
    vela = by[("vela_1", "gpt4o_no_refs", "a_rel")]
    assert (vela.published, vela.spread, vela.column.split, vela.column.criterion) == (36.8, 6.3, "testA", "relevance")
    assert by[("vela_1", "bleu", "b_rel")].published == -10.1
    assert by[("fleur_1", "fleur", "f_ex")].source.startswith("FLEUR paper (Lee et al., ACL 2024), Table 1")
    for cell in by.values():
        assert cell.measure in ("tau_b", "tau_c", "pearson", "accuracy")
        assert cell.source and math.isfinite(cell.published)


def test_dry_run_lists_every_cell_of_the_four_tables_with_what_it_needs(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["reproduce", "--dry-run", "--table", "all", "--data-dir", f"flickr8k_expert={FIXTURE}"]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if " → " in line]
    assert len(lines) == 237
    bleu = next(line for line in lines if line.startswith("harmonic_eval_8 · BLEU · F-EX"))
    assert "✓ metric baselines:bleu" in bleu and "✓ data flickr8k_expert" in bleu and bleu.endswith("→ runnable")
    tiger = next(line for line in lines if line.startswith("harmonic_eval_8 · TIGEr · F-EX"))
    assert f"not runnable: {TIGER}" in tiger
    gpt = next(line for line in lines if line.startswith("harmonic_eval_8 · GPT-FLEUR · F-CF"))
    assert "✗ judge openai:gpt-4o-2024-08-06" in gpt and "no data: pass --data-dir flickr8k_cf=DIR" in gpt
    assert "runnable here" in out and "not runnable: no implementation in this mmjudge" in out


def test_beyond_1_rows_name_their_own_source_and_capture_cells_run_from_scores(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = load_tables()
    capture = {c.column.key: c for c in tables["beyond_1"].cells() if c.row.key == "capture"}
    assert (capture["dc_pcc"].published, capture["dc_tau"].published) == (50.91, 38.61)
    assert (capture["dc_pcc"].measure, capture["dc_tau"].measure) == ("pearson", "tau_b")
    assert capture["dc_tau"].source == (
        "CAPTURE README (github foundation-multimodal-models/CAPTURE @ 0985003), consistency table, row CAPTURE, "
        "column DetailCaps τ"
    )
    assert "DetailCaps-100 (not public)" in capture["dc_pcc"].note
    # A DetailCaps fixture in the upstream columns (ours) and someone's per-item CAPTURE scores
    rng = np.random.default_rng(3)
    root = tmp_path / "dc"
    root.mkdir()
    models = ("CogVLM", "ShareCaptioner", "LLaVA_v15")
    rows = [
        {
            "image": f"img{i}.jpg",
            "source": "COCO",
            "binary": None,
            **{k: f"reference {k} {i}" for k in ("GT_Caption_GPT4O", "GT_Caption_GPT4V", "GT_Caption_Gemini15Pro")},
            **{m: f"caption by {m} of image {i}" for m in models},
            "GPT4_Eval": json.dumps({m: float(rng.integers(1, 6)) for m in models}),
        }
        for i in range(12)
    ]
    pq.write_table(pa.Table.from_pylist(rows), root / "DetailCaps-4870.parquet")
    from mmjudge.datasets import human_judgments

    hj = human_judgments("detailcaps", data_dir=str(root), cache_dir=str(tmp_path / "hf"))
    scores = {item["id"]: float(rng.random()) for item in hj.items}
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps({"id": k, "score": v}) + "\n" for k, v in scores.items()))
    s = settings(
        tmp_path,
        data_dirs={"detailcaps": str(root)},
        dataset_options={"detailcaps": {"cache_dir": str(tmp_path / "hf")}},
        scores={("capture", "detailcaps"): [str(path)]},
    )
    run = reproduce("beyond_1", ["capture"], ["detailcaps"], s)
    metric = [scores[r["id"]] for r in hj.ratings]
    human = [r["score"] for r in hj.ratings]
    pcc, tau = run.results["beyond_1/capture/dc_pcc"], run.results["beyond_1/capture/dc_tau"]
    assert pcc.ours == pytest.approx(100 * scipy.stats.pearsonr(metric, human)[0], abs=1e-3)
    assert tau.ours == pytest.approx(100 * scipy.stats.kendalltau(metric, human, variant="b")[0], abs=1e-3)


def test_the_dry_run_tells_an_unregistered_metric_from_one_without_implementation(monkeypatch):
    import mmjudge.reproduce.needs as needs_module
    from mmjudge.reproduce.output import cell_kind

    monkeypatch.setattr(needs_module, "_registered", lambda metric: metric != "baselines")
    run = plan("harmonic_eval_8", ["bleu", "tiger"], ["flickr8k_expert"])
    kinds = {c.row.key: cell_kind(run.needs[c.key]) for c in run.cells}
    assert kinds == {
        "bleu": "not runnable: metric or configuration not registered in this mmjudge",
        "tiger": "not runnable: no implementation in this mmjudge",
    }


def test_the_dry_run_shows_what_spice_needs_the_corenlp_jars_and_where_they_go(tmp_path, monkeypatch):
    from mmjudge.metrics.baselines.spice import CORENLP_JARS
    from mmjudge.reproduce.output import cell_kind

    monkeypatch.setenv("MMJUDGE_CORENLP_DIR", str(tmp_path))
    run = plan(
        "harmonic_eval_8",
        ["spice"],
        ["flickr8k_expert"],
        settings(tmp_path, data_dirs={"flickr8k_expert": str(FIXTURE)}),
    )
    [cell] = run.cells
    files = next(n for n in run.needs[cell.key] if n.what == "files")
    assert files.detail == f"the CoreNLP 3.6.0 jars in {tmp_path}" and files.present is False
    assert files.missing.startswith("SPICE needs Stanford CoreNLP 3.6.0 (stanford-corenlp-3.6.0.jar and ")
    assert cell_kind(run.needs[cell.key]) == "runnable with files"
    for name in CORENLP_JARS:
        (tmp_path / name).write_bytes(b"")
    run = plan(
        "harmonic_eval_8",
        ["spice"],
        ["flickr8k_expert"],
        settings(tmp_path, data_dirs={"flickr8k_expert": str(FIXTURE)}),
    )
    assert next(n for n in run.needs[cell.key] if n.what == "files").present is True


# --- running cells ------------------------------------------------------------------------------------
def test_ngram_cells_equal_scipy_on_their_scores_and_follow_the_match_rule(tmp_path):
    run = reproduce("harmonic_eval_8", ["bleu", "rouge_l", "cider"], ["flickr8k_expert"], settings(tmp_path))
    results = list(run.results.values())
    assert [r.cell.row.key for r in results] == ["bleu", "rouge_l", "cider"]
    hj = fixture_judgments(tmp_path)
    from mmjudge.metaeval.scores import read_scores

    for result, key in zip(results, ("bleu_4", "rouge_l", "cider")):
        path = next(tmp_path.rglob(f"{result.cell.row.key}-flickr8k_expert-*.jsonl"))
        scores = {i: v[key] for i, v in read_scores(path).items()}
        assert result.ours == pytest.approx(scipy_tau(scores, hj), abs=1e-3)
        assert result.low < result.ours < result.high
        inside = result.low - 0.05 <= result.cell.published <= result.high + 0.05
        assert result.status == ("match" if inside else "outside")
    cells = json.loads((tmp_path / "out" / "cells.json").read_text())
    assert [list(c) for c in cells] == [list(FIELDS)] * 3
    assert cells[0]["source"] == "HarmonicEval paper (Ohi et al.), Table 8, row BLEU, column F-EX τc"
    md = (tmp_path / "out" / "cells.md").read_text()
    assert "| Reference-based | BLEU | 30.8 |" in md and "F-EX τc | ours [95% CI]" in md


def test_a_second_run_computes_nothing_and_a_changed_setting_only_what_it_changes(tmp_path, monkeypatch):
    first = reproduce("harmonic_eval_8", ["bleu", "rouge_l"], ["flickr8k_expert"], settings(tmp_path))
    loads = []
    import mmjudge

    real_load = mmjudge.load
    monkeypatch.setattr(mmjudge, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    again = reproduce("harmonic_eval_8", ["bleu", "rouge_l"], ["flickr8k_expert"], settings(tmp_path))
    assert loads == [] and [r.ours for r in again.results.values()] == [r.ours for r in first.results.values()]
    # Another bootstrap: the figures' intervals are recomputed from the cached per-item scores, no metric loads.
    wider = reproduce("harmonic_eval_8", ["bleu"], ["flickr8k_expert"], settings(tmp_path, bootstrap=300))
    assert (
        loads == []
        and wider.results["harmonic_eval_8/bleu/f_ex"].ours == first.results["harmonic_eval_8/bleu/f_ex"].ours
    )
    assert wider.results["harmonic_eval_8/bleu/f_ex"].low != first.results["harmonic_eval_8/bleu/f_ex"].low


def test_a_killed_run_resumes_at_the_first_unfinished_cell(tmp_path, monkeypatch):
    real = run_module._figures
    calls = []

    def killed(row, *args, **kw):
        calls.append(row.key)
        if row.key == "rouge_l":
            raise Killed
        return real(row, *args, **kw)

    monkeypatch.setattr(run_module, "_figures", killed)
    with pytest.raises(Killed):
        reproduce("harmonic_eval_8", ["bleu", "rouge_l"], ["flickr8k_expert"], settings(tmp_path))
    progress = (tmp_path / "out" / "cells.progress.jsonl").read_text().splitlines()
    assert [json.loads(line)["metric"] for line in progress] == ["bleu"]
    calls.clear()
    monkeypatch.setattr(run_module, "_figures", lambda row, *a, **k: calls.append(row.key) or real(row, *a, **k))
    resumed = reproduce("harmonic_eval_8", ["bleu", "rouge_l"], ["flickr8k_expert"], settings(tmp_path))
    assert calls == ["rouge_l"] and {r.status for r in resumed.results.values()} <= {"match", "outside"}


def test_a_run_walks_each_data_folder_once(tmp_path, monkeypatch):
    """Six cells on two data folders: each folder is walked once for the whole run (it was walked once per cell
    to look its key up, again per row for its score file, again per finished cell), and once again by the next
    run (the walk is remembered for one run only: a folder may change between two runs in one process)."""
    empty = tmp_path / "pascal"  # a folder, but not Pascal-50S's: its cells do not load (and are not_run)
    empty.mkdir()
    from mmjudge.reproduce import scoring

    walks = []  # each a folder_fingerprint's walk of its folder (the loader's own look for images is not counted)
    real = scoring.folder_fingerprint
    monkeypatch.setattr(scoring, "folder_fingerprint", lambda folder: walks.append(folder) or real(folder))
    s = settings(tmp_path, data_dirs={"flickr8k_expert": str(FIXTURE), "pascal50s": str(empty)})
    for _ in range(2):  # the second run finds the Flickr8k cells in the progress file
        walks.clear()
        run = reproduce("harmonic_eval_8", ["bleu", "rouge_l", "cider"], ["flickr8k_expert", "pascal50s"], s)
        statuses = [r.status for r in run.results.values()]
        assert len(statuses) == 6 and statuses.count("not_run") == 3
        assert sorted(walks) == sorted([str(FIXTURE), str(empty)])


def test_the_data_folder_fingerprint_is_what_it_was(tmp_path):
    """The fingerprint keys cached results: the same folder gives the same value as before (files in the order
    of their folders' paths as strings, image files left out), however the file system lists it."""
    import hashlib

    from mmjudge.reproduce.scoring import IMAGE_SUFFIXES, folder_fingerprint

    for name in ("a/x/1.txt", "a.b/2.txt", "a/3.json", "a/4.JPG", "a-b/c/5.txt", "6.txt", "a/x/7.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)

    def before(root: Path) -> str:  # the earlier code, verbatim but for the no-op sort of the walk's dirnames
        digest = hashlib.sha256(str(root.resolve()).encode())
        for dirpath, _, files in sorted(os.walk(root)):
            for name in sorted(files):
                if name.lower().endswith(IMAGE_SUFFIXES):
                    continue
                stat = (Path(dirpath) / name).stat()
                digest.update(f"{Path(dirpath, name).relative_to(root)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()[:16]

    assert folder_fingerprint(str(tmp_path)) == before(tmp_path)
    (tmp_path / "a" / "x" / "7.png").write_text("another image")  # images are the loader's to check
    assert folder_fingerprint(str(tmp_path)) == before(tmp_path)
    (tmp_path / "a.b" / "2.txt").write_text("changed")
    assert folder_fingerprint(str(tmp_path)) == before(tmp_path) and folder_fingerprint(None) == "none"


def test_scores_resume_after_the_rows_already_written(tmp_path):
    """A metric killed half-way through a benchmark: the next run scores only the rest, and the file equals
    an uninterrupted run's."""
    from mmjudge.metrics.baselines import Baselines
    from mmjudge.reproduce.scoring import compute_scores

    hj = fixture_judgments(tmp_path)
    metric = Baselines("rouge_l")
    metric.chunk_size = 8  # ROUGE-L of an item does not depend on the others: chunks may be scored apart
    real = metric._score_chunk
    seen = []

    armed = [True]

    def dies_on_the_third_chunk(items, **kw):
        seen.append(len(items))
        if armed[0] and len(seen) == 3:
            raise Killed
        return real(items, **kw)

    metric._score_chunk = dies_on_the_third_chunk
    path = tmp_path / "scores" / "s.jsonl"
    with pytest.raises(Killed):
        compute_scores(metric, hj, path, progress=False)
    assert not path.exists() and len(Path(f"{path}.part-0-of-1.jsonl").read_text().splitlines()) == 16
    seen.clear()
    armed[0] = False
    resumed = compute_scores(metric, hj, path, progress=False)
    assert sum(seen) == 49 - 16 and sorted(resumed) == sorted(it["id"] for it in hj.items)
    fresh = compute_scores(Baselines("rouge_l"), hj, tmp_path / "f.jsonl", False)
    assert resumed == fresh


def test_scores_cut_off_inside_a_group_start_again(tmp_path):
    """A metric scoring items in groups (Polos' norm_batch_size: ``chunk_multiple``) killed after a row count
    that is not a multiple of the group: resuming would start inside a group, so the run starts again."""
    from mmjudge.metrics.baselines import Baselines
    from mmjudge.reproduce.scoring import compute_scores

    hj = fixture_judgments(tmp_path)
    metric = Baselines("rouge_l")
    metric.chunk_size, metric.chunk_multiple = 8, 4
    real = metric._score_chunk
    seen = []

    def dies_on_the_third_chunk(items, **kw):
        seen.append(len(items))
        if len(seen) == 3:
            raise Killed
        return real(items, **kw)

    metric._score_chunk = dies_on_the_third_chunk
    path = tmp_path / "scores" / "s.jsonl"
    with pytest.raises(Killed):
        compute_scores(metric, hj, path, progress=False)
    part = Path(f"{path}.part-0-of-1.jsonl")
    part.write_text("".join(part.read_text().splitlines(keepends=True)[:14]))  # killed while writing rows
    seen.clear()
    metric._score_chunk = lambda items, **kw: seen.append(len(items)) or real(items, **kw)
    resumed = compute_scores(metric, hj, path, progress=False)
    assert sum(seen) == 49 and resumed == compute_scores(Baselines("rouge_l"), hj, tmp_path / "f.jsonl", False)


def test_someone_elses_scores_in_fleurs_format_fill_a_cell(tmp_path):
    fleur_txt = FIXTURE / "fleur_flickr8k_expert.txt"
    s = settings(tmp_path, scores={("fleur", "flickr8k_expert"): [str(fleur_txt)]})
    run = reproduce("fleur_1", ["fleur"], ["flickr8k_expert"], s)
    result = run.results["fleur_1/fleur/f_ex"]
    # Independently: FLEUR's compute_correlation.py procedure on the raw files (file order, 3 rows per caption).
    data = json.loads((FIXTURE / "flickr8k.json").read_text())
    human = [j["rating"] for v in data.values() for j in v["human_judgement"]]
    ours = [float(line.split()[-1]) for line in fleur_txt.read_text().splitlines() if line.startswith("our")]
    expected = 100 * scipy.stats.kendalltau(np.repeat(ours, 3), human, variant="c")[0]
    assert result.ours == pytest.approx(expected, abs=1e-3) and result.status in ("match", "outside")


def test_cells_that_cannot_run_say_why(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    s = settings(tmp_path, data_dirs={"flickr8k_expert": str(FIXTURE)})
    run = reproduce(
        "harmonic_eval_8", ["tiger", "polos", "gpt_fleur", "fleur", "clip_s"], ["flickr8k_expert", "composite"], s
    )
    why = {key.split("/", 1)[1]: r.reason for key, r in run.results.items()}
    assert all(r.status == "not_run" for r in run.results.values())
    assert why["tiger/f_ex"].startswith(TIGER) and "Google Drive" in why["tiger/f_ex"]
    assert why["polos/f_ex"].endswith("pass --option polos:checkpoint=FILE (metrics/polos/README.md)")
    assert why["gpt_fleur/f_ex"].startswith("no images: ")  # the fixture has no image folder
    assert why["gpt_fleur/com"] == "no data: pass --data-dir composite=DIR"
    md = markdown(run)
    assert "— (1)" in md and f"1. {TIGER}".replace("_", "\\_") in md  # Markdown-escaped


def test_longcap_cells_read_their_split_and_criterion_and_times_are_measured(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    Image.new("RGB", (5, 5), (0, 90, 0)).save(buffer, format="PNG")
    root = tmp_path / "lc"
    root.mkdir()
    words = ["a", "red", "car", "near", "the", "old", "house", "with", "two", "dogs", "and", "trees"]
    for prefix in ("dci_val", "dci_test"):
        cands = [" ".join(rng.choice(words, 9)) for _ in range(8)]
        for short in ("desc", "rel", "flu"):
            rows = [
                {
                    "file_name": f"{prefix}{i}.jpg",
                    "image": {"bytes": buffer.getvalue(), "path": f"{prefix}{i}.jpg"},
                    "refs": ["a red car near the old house with two dogs"],
                    "cand": cands[i],
                    "score": float(rng.random()),
                }
                for i in range(8)
            ]
            pq.write_table(pa.Table.from_pylist(rows), root / f"{prefix}.{short}-00000-of-00001.parquet")
    s = settings(
        tmp_path,
        data_dirs={"longcap_arena": str(root)},
        dataset_options={"longcap_arena": {"cache_dir": str(tmp_path / "hf")}},
        timing=True,
        timing_samples=3,
    )
    run = reproduce("vela_1", ["bleu"], None, s)
    assert [r.to_dict()["benchmark"] for r in run.results.values()][:2] == [
        "longcap_arena/testA/descriptiveness",
        "longcap_arena/testA/relevance",
    ]
    from mmjudge.datasets import human_judgments
    from mmjudge.metaeval.scores import read_scores

    for split, cols in (("testA", ("a_desc", "a_rel", "a_flu")), ("testB", ("b_desc", "b_rel", "b_flu"))):
        hj = human_judgments("longcap_arena", split=split, data_dir=str(root), cache_dir=str(tmp_path / "hf2"))
        path = next(
            p for p in (tmp_path).rglob("bleu-longcap_arena-*.jsonl") if _scores_of(p) == {it["id"] for it in hj.items}
        )
        scores = {i: v["bleu_4"] for i, v in read_scores(path).items()}
        for col, criterion in zip(cols, ("descriptiveness", "relevance", "fluency")):
            assert run.results[f"vela_1/bleu/{col}"].ours == pytest.approx(
                scipy_tau(scores, hj, criterion=criterion), abs=1e-3
            )
    # Items hold file paths, not image bytes: the embedded images were written once beside the judge cache.
    from mmjudge.reproduce.scoring import load_context

    items = load_context("longcap_arena", "testA", None, str(root), {"cache_dir": str(tmp_path / "hf3")}).items
    assert all(isinstance(it["image"], str) and Path(it["image"]).is_file() for it in items)
    assert all(Path(it["image"]).is_relative_to(tmp_path / "reproduce" / "images") for it in items)
    timing = json.loads((tmp_path / "out" / "timing.json").read_text())["bleu"]
    assert timing["samples"] == 3 and timing["ms_per_sample"] > 0 and timing["device"]
    md = (tmp_path / "out" / "cells.md").read_text()
    assert "Inference Time [ms] | ours" in md and "| 0.46 | " in md and "Our times: ms per sample on " in md


def _scores_of(path: Path) -> set:
    return {json.loads(line)["id"] for line in path.read_text().splitlines()}


def test_csv_cells_are_spreadsheet_safe(tmp_path):
    run = plan("fleur_1", ["fleur", "ref_fleur"], ["flickr8k_expert"])
    cell = run.cells[0]
    run.results[cell.key] = CellResult(cell, reason='=HYPERLINK("http://x")')
    other = run.cells[1]
    run.results[other.key] = CellResult(other, reason="first line\rsecond line")
    text = csv_text(run)
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text
    rows = list(csv.reader(io.StringIO(text, newline="")))  # CRLF line ends: the CR stays inside its cell
    assert {len(row) for row in rows} == {len(FIELDS)} and len(rows) == 1 + len(run.results)


def test_cli_mistakes_are_one_line(capsys):
    assert main(["reproduce", "--table", "harmonic_eval_8", "--metrics", "bleux"]) == 2
    assert "No metric 'bleux' in harmonic_eval_8. Did you mean 'bleu'?" in capsys.readouterr().err
    assert (
        main(
            [
                "reproduce",
                "--table",
                "harmonic_eval_8",
                "--metrics",
                "fleur",
                "--scores",
                f"fleur={FIXTURE / 'flickr8k.json'}",
            ]
        )
        == 2
    )
    assert "say which: --scores fleur@BENCHMARK=" in capsys.readouterr().err
    assert main(["reproduce", "--data-dir", "flickr8k_expert", "--dry-run"]) == 2
    assert "--data-dir expects NAME=VALUE" in capsys.readouterr().err


# --- the papers' numbers, on the real files (not committed) ---------------------------------------------
REAL_F8K = os.environ.get("MMJUDGE_FLICKR8K_DIR")
REAL_PASCAL = os.environ.get("MMJUDGE_PASCAL50S_DIR")


@pytest.mark.slow
@pytest.mark.skipif(
    not REAL_F8K, reason="set MMJUDGE_FLICKR8K_DIR to FLEUR's flickr8k.json + fleur_flickr8k_expert.txt"
)
def test_real_flickr8k_expert_gives_the_published_ngram_and_fleur_figures(tmp_path):
    s = settings(
        tmp_path,
        data_dirs={"flickr8k_expert": REAL_F8K},
        dataset_options={"flickr8k_expert": {"cache_dir": str(tmp_path / "hf")}},
        scores={("fleur", "flickr8k_expert"): [str(Path(REAL_F8K) / "fleur_flickr8k_expert.txt")]},
        bootstrap=1000,
    )
    run = reproduce("harmonic_eval_8", ["bleu", "rouge_l", "meteor", "cider", "fleur"], ["flickr8k_expert"], s)
    got = {r.cell.row.key: (round(r.ours, 1), r.status) for r in run.results.values()}
    assert got == {
        "bleu": (30.8, "match"),
        "rouge_l": (32.3, "match"),
        "meteor": (41.8, "match"),
        "cider": (43.9, "match"),
        "fleur": (53.0, "match"),
    }


@pytest.mark.slow
@pytest.mark.skipif(not REAL_PASCAL, reason="set MMJUDGE_PASCAL50S_DIR to pascal_50s.json + fleur_pascal_*.txt")
def test_real_pascal50s_fleur_scores_match_the_published_accuracy(tmp_path):
    files = [str(Path(REAL_PASCAL) / f"fleur_pascal_{c}.txt") for c in ("HC", "HI", "HM", "MM")]
    s = settings(
        tmp_path,
        data_dirs={"pascal50s": REAL_PASCAL},
        dataset_options={"pascal50s": {"cache_dir": str(tmp_path / "hf")}},
        scores={("fleur", "pascal50s"): files},
        bootstrap=1000,
    )
    result = reproduce("harmonic_eval_8", ["fleur"], ["pascal50s"], s).results["harmonic_eval_8/fleur/pas"]
    assert result.status == "match" and abs(result.ours - 83.2) < 0.5


def test_a_prompt_set_row_runs_end_to_end_against_the_toy_server(tmp_path):
    """GPT-FLEUR's cell of Table 8 through the whole command, its judge the toy OpenAI-like server (numbers
    meaningless, plumbing real): every caption asked once with its image, the figure scipy's τ-c of the scores."""
    import shutil

    from PIL import Image

    from toy_api_servers import ToyServer

    data = tmp_path / "f8k"
    (data / "Flickr8k_Dataset").mkdir(parents=True)
    shutil.copy(FIXTURE / "flickr8k.json", data / "flickr8k.json")
    for k, image in enumerate(json.loads((FIXTURE / "flickr8k.json").read_text())):
        Image.new("RGB", (8, 6), (30 * k, 40, 90)).save(data / "Flickr8k_Dataset" / f"{image}.jpg")
    server = ToyServer("openai", script=["0", ".", "85"])
    try:
        options = {"gpt_fleur": {"judge": "openai", "model": "toy-judge", "base_url": server.url}}
        s = settings(tmp_path, data_dirs={"flickr8k_expert": str(data)}, options=options)
        result = reproduce("harmonic_eval_8", ["gpt_fleur"], ["flickr8k_expert"], s).results[
            "harmonic_eval_8/gpt_fleur/f_ex"
        ]
        assert len(server.answers) == 49 and all(
            b["messages"][0]["content"][0]["type"] == "image_url" for b, _ in server.answers
        )
    finally:
        server.close()
    from mmjudge.metaeval.scores import read_scores

    path = next(tmp_path.rglob("gpt_fleur-flickr8k_expert-*.jsonl"))
    scores = {i: v["score"] for i, v in read_scores(path).items()}
    assert result.status in ("match", "outside") and result.ours == pytest.approx(
        scipy_tau(scores, fixture_judgments(tmp_path)), abs=1e-3
    )


def test_timing_loads_the_metric_once_and_times_it_without_its_judge_cache(tmp_path, monkeypatch):
    """--timing on a judge row: one model load per run (it was two: a cache-less instance to time, another to
    score), the timed items sent to the judge even when its cache holds them, the scores through the cache."""
    import shutil

    from PIL import Image

    import mmjudge
    from toy_api_servers import ToyServer

    data = tmp_path / "f8k"
    (data / "Flickr8k_Dataset").mkdir(parents=True)
    shutil.copy(FIXTURE / "flickr8k.json", data / "flickr8k.json")
    for k, image in enumerate(json.loads((FIXTURE / "flickr8k.json").read_text())):
        Image.new("RGB", (8, 6), (30 * k, 40, 90)).save(data / "Flickr8k_Dataset" / f"{image}.jpg")
    loads = []
    real_load = mmjudge.load
    monkeypatch.setattr(mmjudge, "load", lambda *a, **k: loads.append(a) or real_load(*a, **k))
    server = ToyServer("openai", script=["0", ".", "85"])
    try:
        options = {"gpt_fleur": {"judge": "openai", "model": "toy-judge", "base_url": server.url}}
        s = settings(tmp_path, data_dirs={"flickr8k_expert": str(data)}, options=options, timing=True, timing_samples=3)
        first = reproduce("harmonic_eval_8", ["gpt_fleur"], ["flickr8k_expert"], s)
        # 1 warm-up + 3 timed items without the cache, then all 49 scored through it.
        assert len(loads) == 1 and len(server.answers) == 4 + 49
        assert (
            first.timings["gpt_fleur"].samples == 3 and first.results["harmonic_eval_8/gpt_fleur/f_ex"].ours is not None
        )
        again = reproduce("harmonic_eval_8", ["gpt_fleur"], ["flickr8k_expert"], s)  # scores read back, timed again
        assert len(loads) == 2 and len(server.answers) == 4 + 49 + 4
        assert (
            again.results["harmonic_eval_8/gpt_fleur/f_ex"].ours == first.results["harmonic_eval_8/gpt_fleur/f_ex"].ours
        )
        # Without timing, the scores computed again come from the judge cache the first run filled.
        next(tmp_path.rglob("gpt_fleur-flickr8k_expert-*.jsonl")).unlink()
        (tmp_path / "out" / "cells.progress.jsonl").unlink()
        reproduce(
            "harmonic_eval_8",
            ["gpt_fleur"],
            ["flickr8k_expert"],
            settings(tmp_path, data_dirs=s.data_dirs, options=options),
        )
        assert len(loads) == 3 and len(server.answers) == 4 + 49 + 4
    finally:
        server.close()


@pytest.mark.filterwarnings("ignore:G-VEval")  # the dummy judge rates nothing: only its calls are counted
def test_timing_sets_the_persistent_caches_aside_and_puts_them_back(tmp_path, clip_dir):
    """An encoder's embedding store and a judge's answer cache, each full of the timed items' answers: the timed
    run computes them all the same, and the metric has its caches again afterwards."""
    from PIL import Image

    from mmjudge.judges.base import find_layer
    from mmjudge.judges.cached import CachedJudge
    from mmjudge.metrics.clip_score import CLIPScore
    from mmjudge.metrics.prompt_judge import PromptJudge
    from mmjudge.reproduce.timing import time_metric

    images = [Image.new("RGB", (8, 6), (40 * k, 90, 30)) for k in range(4)]
    items = [{"id": str(k), "text": f"a dog number {k}", "image": images[k], "references": ["a dog"]} for k in range(4)]
    store = tmp_path / "embeddings.sqlite"
    CLIPScore(model=clip_dir, cache=store).compute(
        predictions=[it["text"] for it in items], images=images, progress=False
    )
    clip = CLIPScore(model=clip_dir, cache=store)
    assert time_metric(clip, items, samples=3).samples == 3
    assert clip.encoder.computed == 8 and clip.encoder.store is not None  # 4 images + 4 texts, none from the file
    cache = tmp_path / "judge.sqlite"
    PromptJudge("g_veval", judge="dummy", cache=cache).compute(
        predictions=[it["text"] for it in items], images=images, progress=False
    )
    judge = PromptJudge("g_veval", judge="dummy", cache=cache)
    time_metric(judge, items, samples=3)
    assert judge.judge.calls == 4 and find_layer(judge.judge, CachedJudge) is judge.judge
    judge.compute(predictions=[it["text"] for it in items], images=images, progress=False)
    assert judge.judge.calls == 4  # scoring reads the answers the first instance cached


def test_an_outside_cell_says_what_is_known_about_its_published_number():
    """Pascal-50S's n-gram figures in HarmonicEval's Table 8 come from another protocol than FLEUR's file can
    rebuild: the table file says so per cell, and an outside cell carries that as its reason (a match does not)."""
    from mmjudge.reproduce.run import _compare
    from mmjudge.reproduce.tables import load_tables

    cells = {(c.row.key, c.column.key): c for c in load_tables()["harmonic_eval_8"].cells()}
    pascal_bleu, flickr_bleu = cells[("bleu", "pas")], cells[("bleu", "f_ex")]
    assert "TIGEr" in pascal_bleu.note and flickr_bleu.note == ""
    outside = _compare(pascal_bleu, {"value": 0.7455, "ci_low": 0.7332, "ci_high": 0.7580})
    assert outside.status == "outside" and outside.reason == pascal_bleu.note
    inside = _compare(pascal_bleu, {"value": 0.7290, "ci_low": 0.7150, "ci_high": 0.7420})
    assert inside.status == "match" and inside.reason == ""
    assert cell_text(outside).endswith(f"✗ ({pascal_bleu.note})")
