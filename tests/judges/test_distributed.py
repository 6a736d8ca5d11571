"""Data parallelism through torchrun + accelerate on the CPU (gloo): 2 processes give the same results
as one, every request is computed exactly once (uneven splits and a process with nothing to do
included), the shared cache ends up with one row per request, and only rank 0 prints and writes."""

import json
import subprocess
import sys
import textwrap

import pytest

from mmjudge import distributed

pytestmark = pytest.mark.slow

WORKER = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    from PIL import Image
    from mmjudge import HarmonicEval, distributed
    from mmjudge.store import ResultStore
    from mmjudge.judges import load_judge

    out_dir, model, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rank = int(os.environ.get("RANK", "0"))
    world = distributed.world_size()
    texts = [f"A red square number {i}" + " on a green field" * (i % 3) for i in range(n)]
    images = [Image.new("RGB", (48 + 8 * (i % 4), 40), (200, 10 * i % 255, 30)) for i in range(n)]
    results, counts = {}, {}
    for name in ("dummy", "tiny"):
        judge = load_judge("dummy") if name == "dummy" else load_judge("transformers", model=model, batch_size=3)
        cache = os.path.join(out_dir, f"{name}.sqlite")
        he = HarmonicEval(judge=judge, cache=cache, min_mass=0)  # random weights: keep every rating
        out = he.compute(predictions=texts, images=images, progress=False)
        again = he.compute(predictions=texts, images=images, progress=False)  # all from the cache
        assert again["overall"] == out["overall"]
        results[name] = {k: v for k, v in out.items() if k != "signature"}
        counts[name] = judge.calls if name == "dummy" else judge.stats.requests
        counts[name + "_cache_rows"] = len(ResultStore(cache))
    # a call with fewer requests than processes: one process gets none
    single = load_judge("dummy")
    from mmjudge.judges.requests import RatingRequest, Turn
    [r] = single.rate([RatingRequest([Turn("user", "one request")])], progress=False)
    counts["single"] = single.calls
    results["single"] = r.raw
    # What runs at exit must free the process group and join its threads: a group kept alive (a transformers
    # model loaded after it existed once pinned it) left them running into interpreter teardown, where one
    # aborted the process now and then. Thread names from /proc (Linux), before and after.
    def gloo_threads():
        names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
        return sorted(n for n in names if "gloo" in n)
    linux = os.path.isdir("/proc/self/task")
    threads = {"before": gloo_threads() if world > 1 and linux else None}
    if threads["before"] is not None:
        distributed._destroy_process_group()
        threads["after"] = gloo_threads()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"results": results, "counts": counts, "world": world,
                   "main": distributed.is_main(), "gloo_threads": threads}, f)
    """
)


def _run_worker(tmp_path, tiny_llava_dir, n, processes):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / f"run{processes}"
    out.mkdir()
    if processes == 1:
        cmd = [sys.executable, str(script), str(out), tiny_llava_dir, str(n)]
    else:
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={processes}",
            str(script),
            str(out),
            tiny_llava_dir,
            str(n),
        ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(processes)]


@pytest.mark.parametrize("n", [5])
def test_two_processes_equal_one_and_compute_each_request_once(tmp_path, tiny_llava_dir, n):
    [single] = _run_worker(tmp_path, tiny_llava_dir, n, 1)
    ranks = _run_worker(tmp_path, tiny_llava_dir, n, 2)
    requests = 5 * n  # five criteria per text; 25 requests split 13/12 (uneven)
    assert single["world"] == 1 and [r["world"] for r in ranks] == [2, 2]
    assert [r["main"] for r in ranks] == [True, False]
    for rank in ranks:  # every process gets every answer, identical to one process
        for name in ("dummy", "tiny"):
            for key, values in single["results"][name].items():
                assert values == pytest.approx(rank["results"][name][key], abs=1e-6), (name, key)
        assert rank["results"]["single"] == single["results"]["single"]
    for name in ("dummy", "tiny"):
        per_rank = [r["counts"][name] for r in ranks]
        assert sum(per_rank) == requests and min(per_rank) > 0, (name, per_rank)  # each once, both worked
        assert single["counts"][name] == requests
        assert ranks[0]["counts"][name + "_cache_rows"] == requests  # one shared cache, one row each
    assert sorted(r["counts"]["single"] for r in ranks) == [0, 1]
    for rank in ranks:  # the group's threads ran, and are gone once the group is taken down (Linux: /proc)
        if rank["gloo_threads"]["before"] is None:
            continue
        assert "pt_gloo_runloop" in rank["gloo_threads"]["before"], rank["gloo_threads"]
        assert rank["gloo_threads"]["after"] == [], rank["gloo_threads"]


def test_cli_score_under_torchrun_writes_once_and_equals_one_process(tmp_path, tiny_llava_dir):
    items = tmp_path / "items.jsonl"
    from PIL import Image

    lines = []
    for i in range(3):
        path = tmp_path / f"img{i}.png"
        Image.new("RGB", (40 + 8 * i, 40), (10, 100, 20 * i)).save(path)
        lines.append(json.dumps({"id": f"s{i}", "text": f"A green square {i}.", "image": str(path), "task": "ic"}))
    items.write_text("\n".join(lines) + "\n")
    outputs = {}
    for processes in (1, 2):
        out = tmp_path / f"scores{processes}.jsonl"
        args = ["score", "--input", str(items), "--model", tiny_llava_dir, "--output", str(out)]
        env_cache = tmp_path / f"cache{processes}.sqlite"
        if processes == 1:
            cmd = [sys.executable, "-m", "mmjudge.cli", *args]
        else:
            cmd = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node=2",
                "-m",
                "mmjudge.cli",
                *args,
            ]
        import os

        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=600, env={**os.environ, "MMJUDGE_CACHE": str(env_cache)}
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.count("wrote 3 rows") == 1  # rank 1 printed nothing
        outputs[processes] = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(outputs[2]) == 3
    for a, b in zip(outputs[1], outputs[2]):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == (pytest.approx(b[key], abs=1e-6) if isinstance(a[key], float) else b[key]), key


def test_not_distributed_outside_a_launcher(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not distributed.is_distributed() and distributed.is_main()
    assert distributed.broadcast_from_main({"a": 1}) == {"a": 1}
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not distributed.is_distributed()


@pytest.mark.parametrize("rank", [0, 1])
def test_only_the_main_process_reads_the_cache(rank, tmp_path, monkeypatch):
    """Under a launcher the main process reads which answers are cached and broadcasts them; the others
    must not read the whole cache only to throw it away."""
    from mmjudge.judges import load_judge
    from mmjudge.judges.cached import CachedJudge
    from mmjudge.judges.requests import RatingRequest, Turn

    requests = [RatingRequest([Turn("user", f"Rate {i}.")]) for i in range(4)]
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    cached = CachedJudge(load_judge("dummy"), tmp_path / "c.sqlite")
    expected = cached.rate(requests, progress=False)  # fills the cache in one process
    reads, sent = [], []
    get_many = cached.store.get_many

    def counted_get_many(keys):
        reads.append(len(keys))
        return get_many(keys)

    from mmjudge.judges.requests import request_key

    main_found = get_many([request_key(cached.inner.identity(), "rate", r) for r in requests])

    def broadcast(value):  # rank 0 sends what it read; another rank receives rank 0's answer
        sent.append(value)
        return value if rank == 0 else main_found

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setattr(cached.store, "get_many", counted_get_many)
    monkeypatch.setattr(distributed, "broadcast_from_main", broadcast)
    got = cached.rate(requests, progress=False)
    assert [r.raw for r in got] == [r.raw for r in expected]
    assert reads == ([4] if rank == 0 else [])
    assert len(sent) == 1 and (sent[0] is None) == (rank == 1)
