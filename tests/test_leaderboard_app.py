"""The leaderboard app through its HTTP API (gradio_client on 127.0.0.1); scoring by the dummy judge."""

import json
import re

import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from mmjudge.leaderboard.benchmarks import demo_outputs, demo_scores  # noqa: E402
from mmjudge.leaderboard.settings import DEFAULTS  # noqa: E402
from mmjudge.leaderboard.store import Store  # noqa: E402
from mmjudge.leaderboard.worker import Worker  # noqa: E402


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return gradio_client.handle_file(str(path))


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    from mmjudge.leaderboard.app import build_app, launch

    data_dir = tmp_path_factory.mktemp("board")
    settings = {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20, "rate_limit": 100}
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    client = gradio_client.Client(url, verbose=False)
    yield client, data_dir, settings
    demo.close()


def test_submit_score_and_read_back(board, tmp_path, monkeypatch):
    client, data_dir, settings = board
    evil = '<img src=x onerror="alert(1)">'
    message = client.predict("models", "demo-inputs", evil, "ana", "https://example.org/m", "my *model*",
                             write(tmp_path / "out.jsonl", demo_outputs(2)), api_name="/submit")  # fmt: skip
    sid = re.search(r"submission ([0-9a-f]{32}) is PENDING; position 1 in the queue", message).group(1)
    queue = client.predict(api_name="/queue")
    assert [row[-1] for row in queue["data"]] == [sid] and queue["data"][0][0] == "1"
    refused = client.predict("models", "demo-inputs", "dup", "bo", "", "", write(tmp_path / "same.jsonl", demo_outputs(2)),
                             api_name="/submit")  # fmt: skip
    assert refused.startswith("❌ Not accepted — duplicate: the same file was already submitted as")
    invalid = client.predict("models", "demo-inputs", "short", "bo", "", "", write(tmp_path / "short.jsonl", demo_outputs(0)[:7]),
                             api_name="/submit")  # fmt: skip
    assert invalid == "❌ Not accepted — invalid file: missing 1 id(s) of the benchmark: &#x27;demo-reg-2&#x27;."
    metric = client.predict("metrics", "demo-judgments", "my-metric", "cy", "", "", write(tmp_path / "s.jsonl", demo_scores(0.5)),
                            api_name="/submit")  # fmt: skip
    assert metric.startswith("✅ received")

    assert Worker(Store(data_dir), settings, progress=False).run(once=True) == 2
    page, breakdown = client.predict(sid, api_name="/submission")
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page and "<img" not in page
    assert "**Status:** DONE" in page and "judge=dummy" in page and "#### Example explanations" in page
    assert [row[0] for row in breakdown["data"]] == ["ic", "vqa", "vdu", "reg", "all"]
    table = client.predict("", "overall", api_name="/models_table")
    assert [(r["rank"], r["name"]) for r in table] == [(1, evil)]  # the table cell is text, not HTML
    metrics = client.predict("demo-judgments", "", api_name="/metrics_table")
    assert metrics[0]["name"] == "my-metric" and 0 < metrics[0]["headline"] <= 1

    assert client.predict("", sid, "hide", api_name="/admin") .startswith("❌ admin actions are disabled")
    monkeypatch.setenv("MMJUDGE_LEADERBOARD_ADMIN_TOKEN", "t0ken")
    assert client.predict("guess", sid, "hide", api_name="/admin") == "❌ wrong admin token."
    assert client.predict("t0ken", sid, "re-run", api_name="/admin") == f"✅ re-run {sid}"
    assert Store(data_dir).get(sid)["status"] == "PENDING"
    assert client.predict("t0ken", sid, "hide", api_name="/admin") == f"✅ hide {sid}"
    assert client.predict("", "overall", api_name="/models_table") == []


def test_metrics_signature_groups_follow_the_selected_benchmark(tmp_path, monkeypatch):
    from mmjudge.leaderboard import benchmarks
    from mmjudge.leaderboard.app import build_app
    from mmjudge.leaderboard.intake import submit

    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    benchmarks.register("other-judgments", "metrics", lambda: benchmarks.get_benchmark("demo-judgments"))
    store = Store(tmp_path)
    data = "".join(json.dumps(r) + "\n" for r in demo_scores(0.5)).encode()
    assert submit(store, track="metrics", benchmark="demo-judgments", name="x", submitter="s", data=data).accepted
    Worker(store, {**DEFAULTS, "judge": "dummy", "bootstrap": 0}, progress=False).run(once=True)
    demo = build_app(str(tmp_path), {**DEFAULTS, "judge": "dummy"})
    ids = {b.elem_id: b._id for b in demo.blocks.values() if getattr(b, "elem_id", None)}
    on_bench = [f for f in demo.fns.values() if (ids["metrics-bench"], "change") in [tuple(t) for t in f.targets]
                and [o._id for o in f.outputs] == [ids["metrics-group"]]]  # fmt: skip
    assert len(on_bench) == 1  # picking a benchmark refreshes its signature groups
    assert on_bench[0].fn("demo-judgments").choices == [(f"1: {store.done('metrics')[0]['signature']}", 0)]
    assert on_bench[0].fn("other-judgments").choices == []
