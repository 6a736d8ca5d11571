"""A Flickr8k-Expert-shaped benchmark on the board, end to end: ``flickr8k.json`` in the layout the FLEUR
repository ships (``annotations/flickr8k.json``), on the Metrics track, scored by per-caption scores in FLEUR's
own result format (``results/fleur_flickr8k_expert.txt``).

The participant's path, through the board's public API only: list the benchmarks, download the items,
join them with the metric's scores (``leaderboard/examples/fleur_flickr8k_scores.py``), submit, let
the worker run the meta-evaluation, read the ranked row. Its figure must equal the meta-evaluation of
the same scores and an independent Kendall τ-c computed the FLEUR repository's way (scipy, one row per
human judgment) from the raw files. The committed fixture is synthetic, of the real slice's shape (see its
README). With ``MMJUDGE_FLICKR8K_DIR`` pointing at a folder holding FLEUR's full ``flickr8k.json`` and
``fleur_flickr8k_expert.txt``, the last test checks the published figure (53.0; 53.026 both ways by hand)."""

import importlib.util
import json
import math
import os
import threading
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from mmjudge.leaderboard.settings import DEFAULTS  # noqa: E402
from mmjudge.leaderboard.store import Store  # noqa: E402
from mmjudge.leaderboard.worker import Worker  # noqa: E402
from repo_paths import FIXTURES, ROOT  # noqa: E402

FIXTURE = FIXTURES / "flickr8k_expert"


def converter():
    spec = importlib.util.spec_from_file_location(
        "fleur_flickr8k_scores", ROOT / "leaderboard" / "examples" / "fleur_flickr8k_scores.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fleur_repo_tau_c(annotations: Path, results: Path, column: str = "our") -> float:
    """FLEUR's compute_correlation.py, independently of mmjudge: every non-NaN human rating in file
    order, each caption's score repeated for its three judgments, scipy's Kendall τ-c."""
    import numpy as np
    import scipy.stats

    human = [
        j["rating"]
        for v in json.loads(annotations.read_text()).values()
        for j in v["human_judgement"]
        if not np.isnan(j["rating"])
    ]
    scores = [float(line.split()[-1]) for line in results.read_text().splitlines() if line.startswith(column)]
    repeated = [s for s in scores for _ in range(3)]
    assert len(repeated) == len(human)
    return float(scipy.stats.kendalltau(repeated, human, variant="c")[0])


@pytest.fixture
def registry(monkeypatch):
    from mmjudge.leaderboard import benchmarks

    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    monkeypatch.setattr(benchmarks, "_BUILT", dict(benchmarks._BUILT))


def board_settings(tmp_path, data_dir: Path, counts) -> dict:
    entry = {
        "name": "flickr8k_expert",
        "track": "metrics",
        "data_dir": str(data_dir),
        "cache_dir": str(tmp_path / "hf"),
    }
    if counts is not None:
        entry["expected_counts"] = counts  # a slice: not upstream's 5,664 rows
    return {**DEFAULTS, "judge": "dummy", "bootstrap": 200, "rate_limit": 100, "benchmarks": [entry]}


def run_through_the_board(tmp_path, settings, fleur_txt: Path):
    """Download → join with FLEUR's scores → submit → worker → ranked row, over the HTTP API."""
    from mmjudge.leaderboard.app import build_app, launch
    from mmjudge.leaderboard.client import BoardClient

    data_dir = tmp_path / "board"
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    stop = threading.Event()
    worker = threading.Thread(
        target=Worker(Store(data_dir), settings, progress=False).run, kwargs={"poll_s": 0.2, "stop": stop}, daemon=True
    )
    worker.start()
    try:
        board = BoardClient(url)
        listed = board.benchmark("flickr8k_expert")
        board.download("flickr8k_expert", tmp_path / "f8k.zip", "zip")
        with zipfile.ZipFile(tmp_path / "f8k.zip") as zf:
            inputs = [json.loads(line) for line in zf.read("flickr8k_expert/inputs.jsonl").decode().splitlines()]
        conv = converter()
        rows = {}
        for column in ("our score", "model score"):  # FLEUR, and the raw rating LLaVA printed
            rows[column] = conv.submission(inputs, conv.read_fleur(fleur_txt.read_text(), column))
            path = tmp_path / f"{column.split()[0]}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows[column]))
            sid = board.submit(
                "flickr8k_expert", path, "FLEUR" if column == "our score" else "LLaVA raw rating", "fleur-authors"
            )
            board.wait(sid, timeout_s=300, poll_s=0.2)
        table = board.client.predict("metrics", "flickr8k_expert", "", "", api_name="/results")
        return listed, inputs, rows, table
    finally:
        stop.set()
        worker.join(timeout=30)
        demo.close()


def test_flickr8k_expert_from_upload_to_a_ranked_row(tmp_path, registry):
    from mmjudge.datasets import human_judgments
    from mmjudge.metaeval import meta_evaluate

    settings = board_settings(tmp_path, FIXTURE, counts={})
    listed, inputs, rows, table = run_through_the_board(tmp_path, settings, FIXTURE / "fleur_flickr8k_expert.txt")
    assert (listed["track"], listed["items"], listed["example"]) == (
        "metrics",
        49,
        {"id": inputs[0]["id"], "score": 0.0},
    )
    assert set(inputs[0]) == {"id", "task", "text", "references", "image_path"}  # never a rating
    assert inputs[0]["text"] == "A brown cyclist runs beside a blue car ."  # the fixture's first caption
    assert len(inputs[0]["references"]) == 5
    by_name = {r["name"]: r for r in table}
    fleur = by_name["FLEUR"]
    # 1. The meta-evaluation of the same scores, under the board's protocol.
    hj = human_judgments("flickr8k_expert", data_dir=str(FIXTURE), expected_counts={}, cache_dir=str(tmp_path / "hf2"))
    assert len(hj.items) == 49 and len(hj.ratings) == 147
    expected = meta_evaluate(
        hj,
        {"x": {r["id"]: {"score": r["score"]} for r in rows["our score"]}},
        protocol=settings["protocol"],
        bootstrap=settings["bootstrap"],
        seed=settings["seed"],
    ).headline("x")
    assert (expected["measure"], expected["criterion"]) == ("tau_c", "overall")
    assert fleur["headline"] == pytest.approx(expected["value"], abs=1e-6)  # records are rounded to 6 digits
    assert (fleur["ci_low"], fleur["ci_high"]) == (
        pytest.approx(expected["ci_low"], abs=1e-6),
        pytest.approx(expected["ci_high"], abs=1e-6),
    )
    # 2. Independently of mmjudge: FLEUR's own procedure on the raw fixture files.
    independent = fleur_repo_tau_c(FIXTURE / "flickr8k.json", FIXTURE / "fleur_flickr8k_expert.txt")
    assert fleur["headline"] == pytest.approx(independent, abs=1e-6)
    raw = by_name["LLaVA raw rating"]
    assert raw["headline"] == pytest.approx(
        fleur_repo_tau_c(FIXTURE / "flickr8k.json", FIXTURE / "fleur_flickr8k_expert.txt", "model"), abs=1e-6
    )
    # 3. Ranked by the headline, each with its interval, the second compared with the first on the same items.
    assert [r["rank"] for r in table] == [1, 2] and table[0]["headline"] > table[1]["headline"]
    assert all(r["ci_low"] < r["headline"] < r["ci_high"] for r in table)
    assert table[0]["separable"] is None and isinstance(table[1]["separable"], bool)
    assert all(r["signature"].startswith("mmjudge=") and "benchmark=flickr8k_expert" in r["signature"] for r in table)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("MMJUDGE_FLICKR8K_DIR"),
    reason="set MMJUDGE_FLICKR8K_DIR to the full flickr8k.json + FLEUR results",
)
def test_full_flickr8k_expert_gives_the_published_figure(tmp_path, registry):
    folder = Path(os.environ["MMJUDGE_FLICKR8K_DIR"])
    settings = board_settings(tmp_path, folder, counts=None)  # upstream's counts: 5,664 pairs, 16,992 judgments
    _, inputs, _, table = run_through_the_board(tmp_path, settings, folder / "fleur_flickr8k_expert.txt")
    fleur = next(r for r in table if r["name"] == "FLEUR")
    assert len(inputs) == 5664
    assert fleur["headline"] == pytest.approx(
        fleur_repo_tau_c(folder / "flickr8k.json", folder / "fleur_flickr8k_expert.txt"), abs=1e-6
    )
    assert math.isclose(100 * fleur["headline"], 53.0, abs_tol=0.05)  # FLEUR's published Flickr8k-Expert τ-c


def test_one_loader_under_its_own_board_name(tmp_path, registry):
    """``benchmark`` names a configured entry on the board (e.g. LongCap-Arena's testA and testB, one
    loader with two splits); everything but name/track/benchmark goes to the loader."""
    from mmjudge.leaderboard.benchmarks import available_benchmarks, configure, get_benchmark

    configure(
        [
            {
                "name": "flickr8k_expert",
                "benchmark": "f8k-slice",
                "track": "metrics",
                "data_dir": str(FIXTURE),
                "expected_counts": {},
                "cache_dir": str(tmp_path / "hf"),
            }
        ]
    )
    assert "f8k-slice" in available_benchmarks("metrics") and "flickr8k_expert" not in available_benchmarks("metrics")
    bench = get_benchmark("f8k-slice")
    assert (bench.name, len(bench.ids), bench.description) == (
        "f8k-slice",
        49,
        "human judgments of flickr8k_expert (mmjudge.load_dataset)",
    )
    assert bench.judgments().correlation == "tau_c"
