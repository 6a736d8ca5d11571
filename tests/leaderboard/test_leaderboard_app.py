"""The leaderboard app through its HTTP API (gradio_client on 127.0.0.1); scoring by the dummy judge."""

import contextlib
import json
import re

import pytest

pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from mmjudge.leaderboard.benchmarks import demo_outputs, demo_scores  # noqa: E402
from mmjudge.leaderboard.settings import DEFAULTS  # noqa: E402
from mmjudge.leaderboard.store import Store  # noqa: E402
from mmjudge.leaderboard.worker import Worker  # noqa: E402

TOKEN = "t0ken-t0ken-t0ken-t0ken"  # admin tokens under 16 characters leave admin actions disabled


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return gradio_client.handle_file(str(path))


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    from mmjudge.leaderboard.app import build_app, launch

    data_dir = tmp_path_factory.mktemp("board")
    settings = {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20, "rate_limit": 100, "admin_delay_s": 0.5}
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    client = gradio_client.Client(url, verbose=False)
    yield client, data_dir, settings
    demo.close()


def test_submit_score_and_read_back(board, tmp_path, monkeypatch):
    client, data_dir, settings = board
    evil = '<img src=x onerror="alert(1)">'
    message = client.predict(
        "models",
        "demo-inputs",
        evil,
        "ana",
        "https://example.org/m",
        "my *model*",
        write(tmp_path / "out.jsonl", demo_outputs(2)),
        api_name="/submit",
    )
    sid = re.search(r"submission ([0-9a-f]{32}) is PENDING; position 1 in the queue", message).group(1)
    queue = client.predict(api_name="/queue")
    assert [row[-1] for row in queue["data"]] == [sid] and queue["data"][0][0] == "1"
    refused = client.predict(
        "models",
        "demo-inputs",
        "dup",
        "bo",
        "",
        "",
        write(tmp_path / "same.jsonl", demo_outputs(2)),
        api_name="/submit",
    )
    assert refused.startswith("❌ Not accepted — duplicate: the same file was already submitted as")
    invalid = client.predict(
        "models",
        "demo-inputs",
        "short",
        "bo",
        "",
        "",
        write(tmp_path / "short.jsonl", demo_outputs(0)[:7]),
        api_name="/submit",
    )
    assert (
        invalid == "❌ Not accepted — invalid file: missing 1 id(s) of the benchmark: 'demo-reg-2'."
    )  # plain text, no entities
    metric = client.predict(
        "metrics",
        "demo-judgments",
        "my-metric",
        "cy",
        "",
        "",
        write(tmp_path / "s.jsonl", demo_scores(0.5)),
        api_name="/submit",
    )
    assert metric.startswith("✅ received")

    assert Worker(Store(data_dir), settings, progress=False).run(once=True) == 2
    page, breakdown = client.predict(sid, api_name="/submission")
    assert '&lt;img src=x onerror="alert(1)"&gt;' in page and "<img" not in page
    assert "**Status:** DONE" in page and "judge=dummy" in page and "#### Example explanations" in page
    assert [row[0] for row in breakdown["data"]] == ["ic", "vqa", "vdu", "reg", "all"]
    table = client.predict("", "overall", api_name="/models_table")
    assert [(r["rank"], r["name"]) for r in table] == [(1, evil)]  # the table cell is text, not HTML
    metrics = client.predict("demo-judgments", "", api_name="/metrics_table")
    assert metrics[0]["name"] == "my-metric" and 0 < metrics[0]["headline"] <= 1

    assert client.predict("", sid, "hide", api_name="/admin").startswith("❌ admin actions are disabled")
    monkeypatch.setenv("MMJUDGE_LEADERBOARD_ADMIN_TOKEN", TOKEN)
    assert client.predict("guess", sid, "hide", api_name="/admin") == "❌ wrong admin token."
    # Within the wait after that wrong token: the right one is let in all the same (issue 29.5).
    assert client.predict(TOKEN, sid, "re-run", api_name="/admin") == f"✅ re-run {sid}"
    assert Store(data_dir).get(sid).status == "PENDING"
    assert client.predict(TOKEN, sid, "hide", api_name="/admin") == f"✅ hide {sid}"
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
    on_bench = [
        f
        for f in demo.fns.values()
        if (ids["metrics-bench"], "change") in [tuple(t) for t in f.targets]
        and [o._id for o in f.outputs] == [ids["metrics-group"]]
    ]
    assert len(on_bench) == 1  # picking a benchmark refreshes its signature groups
    assert on_bench[0].fn("demo-judgments").choices == [(f"1: {store.done('metrics')[0].signature}", 0)]
    assert on_bench[0].fn("other-judgments").choices == []


def launched(data_dir, **overrides):
    """The board served on 127.0.0.1 (closed by the caller), and a client for its HTTP API."""
    from mmjudge.leaderboard.app import build_app, launch

    settings = {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20, **overrides}
    demo = build_app(str(data_dir), settings)
    _, url, _ = launch(demo, host="127.0.0.1", prevent_thread_lock=True, quiet=True)
    return demo, gradio_client.Client(url, verbose=False)


def test_rate_limit_keys_on_the_address_not_the_typed_name(tmp_path):
    """The bypass of issue 21: every upload under a new submitter name was a new rate-limit bucket
    (Gradio could not inject gr.Request, so the typed name stood in for the client)."""
    demo, client = launched(tmp_path / "board", rate_limit=3)
    try:
        messages = []
        for k, who in enumerate(["ana", "bo", "", "cy", "dee"]):
            rows = [{**r, "text": f"{r['text']} Try {k}."} for r in demo_outputs(0)]
            messages.append(
                client.predict(
                    "models",
                    "demo-inputs",
                    f"m{k}",
                    who,
                    "",
                    "",
                    write(tmp_path / f"{k}.jsonl", rows),
                    api_name="/submit",
                )
            )
    finally:
        demo.close()
    assert [m[:1] for m in messages] == ["✅", "✅", "✅", "❌", "❌"], messages
    assert messages[3] == (
        "❌ Not accepted — rate limit: your address (127.0.0.1) sent 3 submissions in the last 60 minutes; "
        "the limit is 3 per 60 minutes (refused uploads count). Try again later."
    )
    store = Store(tmp_path / "board")
    assert [s.submitter for s in store.submissions()] == ["ana", "bo", "anonymous"]  # an empty name is allowed
    assert {s.client for s in store.submissions()} | {r.client for r in store.rejections()} == {"ip:127.0.0.1"}


PAYLOADS = ["[Session expired: click here](https://evil.example/)", "<img src=x onerror=alert(1)>"]


def test_messages_repeating_user_input_are_escaped(tmp_path):
    """The page's Markdown never turns a visitor's text into a link or an element; the API's plain-text
    replies repeat it unchanged (no HTML entities)."""
    from mmjudge.report import markdown_text

    demo, client = launched(tmp_path / "board", rate_limit=100)
    try:
        form = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "submit_form")
        for k, payload in enumerate(PAYLOADS):
            rows = [{**r, "text": f"{r['text']} Payload {k}."} for r in demo_outputs(0)]
            reply = client.predict(
                "models",
                "demo-inputs",
                payload,
                payload,
                payload,
                payload,
                write(tmp_path / f"{k}.jsonl", rows),
                api_name="/submit",
            )
            assert reply == (
                "❌ Not accepted — the link must start with http:// or https:// and hold no spaces or quotes, "
                f"not {payload!r}."
            )
            shown = form(
                "models", "demo-inputs", payload, payload, payload, payload, str(tmp_path / f"{k}.jsonl"), None
            )
            assert shown == markdown_text(reply) and "](" not in shown.replace("\\](", "") and "<img" not in shown
            sid = re.search(
                r"[0-9a-f]{32}",
                client.predict(
                    "models",
                    "demo-inputs",
                    payload,
                    payload,
                    "",
                    payload,
                    write(tmp_path / f"ok{k}.jsonl", rows),
                    api_name="/submit",
                ),
            ).group(0)
            page, _ = client.predict(sid, api_name="/submission")
            assert markdown_text(payload) in page and "<img" not in page and "](https://evil" not in page
            missing, _ = client.predict(payload, api_name="/submission")
            assert missing == f"No submission with id {markdown_text(payload)}."
    finally:
        demo.close()


def test_admin_guesses_are_throttled_but_the_right_token_always_gets_through(tmp_path, monkeypatch):
    """Issue 29.5 as found, through the HTTP API: wrong tokens from an address made the right one wait
    too, so anyone sharing the address could keep the admin out. Wrong tokens still wait; the right one
    never does."""
    monkeypatch.setenv("MMJUDGE_LEADERBOARD_ADMIN_TOKEN", TOKEN)
    demo, client = launched(tmp_path / "board", admin_delay_s=60.0)
    try:
        replies = [client.predict(f"guess-{k}", "x", "hide", api_name="/admin") for k in range(6)]
        assert replies[0] == "❌ wrong admin token."
        assert all(
            r.startswith("❌ too many wrong admin tokens from your address (127.0.0.1): wait ") for r in replies[1:]
        ), replies
        # The admin, from the same address, inside the 60 s wait: let in (the action runs).
        assert client.predict(TOKEN, "x", "hide", api_name="/admin") == "❌ no submission 'x'"
        assert client.predict("guess", "x", "hide", api_name="/admin") == "❌ wrong admin token."  # record cleared
    finally:
        demo.close()


def test_oversized_and_missing_uploads_say_what_to_do(tmp_path):
    """One limit, in one wording, everywhere (issue 29.9: the page said 4.0 MB, the browser 32.0 Mb, the
    CLI "33554432 bytes set in component"): the web server's cap is the board's own limit, and
    ``mmjudge leaderboard submit`` refuses a larger file before sending it, in the board's words."""
    from mmjudge.leaderboard.client import BoardClient
    from mmjudge.leaderboard.intake import submit_path

    demo, client = launched(tmp_path / "board")
    big = tmp_path / "big.jsonl"
    line = json.dumps({"id": "demo-ic-1", "text": "x" * 1000}) + "\n"
    big.write_text(line * (20 * 2**20 // len(line) + 1))
    said = (
        "the file is 20.0 MB; this board accepts at most 4.0 MB (4,194,304 bytes). "
        'Keep only the fields the track needs in each line: "id" and "text" (Models) or "id" and the scores (Metrics).'
    )
    try:
        assert client.config["max_file_size"] == 4 * 2**20  # what the browser's pop-up and gradio_client check
        with pytest.raises(ValueError) as err:
            BoardClient(client.src).submit("demo-inputs", big, "big")
        assert str(err.value) == f"--file {big}: {said}"
        with pytest.raises(ValueError, match="exceeds the maximum file size of 4194304 bytes"):
            client.predict(
                "models", "demo-inputs", "big", "", "", "", gradio_client.handle_file(str(big)), api_name="/submit"
            )
        # Behind the web server, intake says it the same way to any other path that reaches it.
        refused = submit_path(
            demo.lb_store,
            str(big),
            4 * 2**20,
            track="models",
            benchmark="demo-inputs",
            name="big",
            submitter="a",
            client="ip:9",
        )
        assert refused.message == f"invalid file: {said}"
        reply = client.predict("models", "demo-inputs", "none", "ana", "", "", None, api_name="/submit")
        assert reply.startswith("❌ Not accepted — no file arrived. Choose a .jsonl file of at most 4.0 MB")
        scores = write(tmp_path / "scores.jsonl", demo_scores(0.1))
        reply = client.predict("models", "demo-inputs", "wrong-track", "ana", "", "", scores, api_name="/submit")
        assert "This looks like a Metrics-track score file" in reply and "NoneType" not in reply
    finally:
        demo.close()


# The board runs in this process, so gradio's own pandas deprecation notices (ignored outside a test, where
# DeprecationWarning from a library is hidden) would reach the CLI's stderr in the middle of its answer.
@pytest.mark.filterwarnings("ignore::DeprecationWarning:gradio.queueing")
def test_a_builder_downloads_the_inputs_and_submits_from_the_cli(tmp_path, capsys):
    """The participant's path with nothing but the board's URL: download the inputs (zip and Parquet),
    build a submission from them, submit it with `mmjudge leaderboard submit`, which waits for the
    ranked row; the worker runs beside the board."""
    import threading
    import zipfile

    from mmjudge.cli import main

    demo, client = launched(tmp_path / "board", rate_limit=100)
    url = client.src
    stop = threading.Event()
    worker = threading.Thread(
        target=Worker(
            Store(tmp_path / "board"), {**DEFAULTS, "judge": "dummy", "explain_examples": 0}, progress=False
        ).run,
        kwargs={"poll_s": 0.2, "stop": stop},
        daemon=True,
    )
    worker.start()
    try:
        listed = client.predict(api_name="/benchmarks")
        assert [(b["name"], b["track"], b["items"]) for b in listed] == [
            ("demo-inputs", "models", 8),
            ("demo-judgments", "metrics", 24),
            ("demo-arena", "arena", 8),
            ("demo-judge-pairs", "judges", 24),
        ]
        assert listed[0]["example"] == {"id": "demo-ic-1", "text": "<your model's caption for this image>"}
        assert (
            main(
                [
                    "leaderboard",
                    "download",
                    "--url",
                    url,
                    "--benchmark",
                    "demo-inputs",
                    "--out",
                    str(tmp_path / "in.zip"),
                ]
            )
            == 0
        )
        with zipfile.ZipFile(tmp_path / "in.zip") as zf:
            items = [json.loads(line) for line in zf.read("demo-inputs/inputs.jsonl").decode().splitlines()]
            first_image = zf.read(f"demo-inputs/{items[0]['image']}")
        assert [it["id"] for it in items] == get_benchmark_ids("demo-inputs") and first_image.startswith(b"\x89PNG")
        assert (
            main(
                [
                    "leaderboard",
                    "download",
                    "--url",
                    url,
                    "--benchmark",
                    "demo-inputs",
                    "--format",
                    "parquet",
                    "--out",
                    str(tmp_path / "in.parquet"),
                ]
            )
            == 0
        )
        import datasets

        table = datasets.load_dataset("parquet", data_files=str(tmp_path / "in.parquet"), split="train")
        assert table["id"] == [it["id"] for it in items] and table[0]["image"].size == (64, 64)
        # A "model" that answers from the inputs it was given.
        outputs = [{"id": it["id"], "text": f"A shape; asked {it['question']!r}, box {it['box']}."} for it in items]
        (tmp_path / "outputs.jsonl").write_text("".join(json.dumps(o) + "\n" for o in outputs))
        capsys.readouterr()
        assert (
            main(
                [
                    "leaderboard",
                    "submit",
                    "--url",
                    url,
                    "--benchmark",
                    "demo-inputs",
                    "--file",
                    str(tmp_path / "outputs.jsonl"),
                    "--name",
                    "cli-vlm",
                    "--poll",
                    "0.2",
                    "--timeout",
                    "60",
                ]
            )
            == 0
        )
        printed = capsys.readouterr().out.splitlines()
        assert printed[0].startswith("accepted: submission ") and re.fullmatch(
            r"DONE: rank 1 of 1 by overall = \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]; judge failures 0", printed[-1]
        ), printed
        records = client.predict("models", "demo-inputs", "", "", api_name="/results")
        assert [(r["rank"], r["name"], r["failed"]) for r in records] == [(1, "cli-vlm", 0)]
        assert (
            records[0]["ci_low"] < records[0]["overall"] < records[0]["ci_high"]
            and records[0]["benchmark"] == "demo-inputs"
        )
        # Refused: the same file again is one line, exit status 2.
        assert (
            main(
                [
                    "leaderboard",
                    "submit",
                    "--url",
                    url,
                    "--benchmark",
                    "demo-inputs",
                    "--file",
                    str(tmp_path / "outputs.jsonl"),
                    "--name",
                    "again",
                ]
            )
            == 2
        )
        assert capsys.readouterr().err.startswith("mmjudge leaderboard: error: Not accepted — duplicate: the same file")
        assert main(["leaderboard", "download", "--url", url, "--benchmark", "nope"]) == 2
        assert "has no benchmark 'nope'; it has demo-inputs, demo-judgments" in capsys.readouterr().err
    finally:
        stop.set()
        worker.join(timeout=10)
        demo.close()


def get_benchmark_ids(name):
    from mmjudge.leaderboard.benchmarks import get_benchmark

    return get_benchmark(name).ids


class LostReplyProxy:
    """A loopback TCP proxy in front of the board that cuts the connection carrying the first reply to an
    upload (the bytes holding "received: submission"), after the board stored it: a lost reply."""

    def __init__(self, upstream_port: int, marker: bytes = b"received: submission"):
        import socket
        import threading

        self.upstream_port, self.marker, self.dropped = upstream_port, marker, 0
        self.lock = threading.Lock()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                downstream, _ = self.sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:  # the board already stopped (the test is over): drop this client
                downstream.close()
                continue
            threading.Thread(target=self._pump, args=(downstream, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, downstream, True), daemon=True).start()

    def _pump(self, source, target, replies: bool) -> None:
        import socket

        try:
            while data := source.recv(65536):
                if replies and self.marker in data:
                    with self.lock:
                        cut, self.dropped = self.dropped == 0, self.dropped + (self.dropped == 0)
                    if cut:
                        break
                target.sendall(data)
        except OSError:
            pass
        for s in (source, target):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.filterwarnings("ignore::DeprecationWarning:gradio.queueing")
def test_submit_retries_a_lost_reply_and_gets_the_original_receipt(tmp_path, capsys):
    """Issue 29.8 as found: the upload was stored, the server's reply never arrived; the retry was refused
    as a duplicate and `mmjudge leaderboard submit` (which did not retry) exited 2 for an accepted file.
    Now the CLI retries the dropped connection and the board answers the repeat with the original receipt."""
    from mmjudge.cli import main

    demo, client = launched(tmp_path / "board", rate_limit=2)
    port = int(client.src.rstrip("/").rsplit(":", 1)[1])
    proxy = LostReplyProxy(port)
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in demo_outputs(1)))
    try:
        code = main(
            [
                "leaderboard",
                "submit",
                "--url",
                f"http://127.0.0.1:{proxy.port}",
                "--benchmark",
                "demo-inputs",
                "--file",
                str(tmp_path / "out.jsonl"),
                "--name",
                "lost-reply",
                "--no-wait",
            ]
        )
        out, err = capsys.readouterr()
        store = Store(tmp_path / "board")
        [stored] = store.submissions()
        assert code == 0 and proxy.dropped == 1
        assert out.splitlines() == [f"accepted: submission {stored.id}"]
        assert "dropped during /submit" in err and "trying again in 1 s (1 of 5)" in err
        assert store.rejections() == [] and store.count_recent(stored.client, 0) == 1  # the retry did not count
        # The same through the raw API: the repeat is the receipt, with the full id, not a refusal.
        again = client.predict(
            "models",
            "demo-inputs",
            "lost-reply",
            "",
            "",
            "",
            gradio_client.handle_file(str(tmp_path / "out.jsonl")),
            api_name="/submit",
        )
        assert again.startswith(f"✅ received: submission {stored.id} is PENDING; position 1 in the queue.")
        assert len(store.submissions()) == 1
    finally:
        proxy.close()
        demo.close()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.filterwarnings("ignore::DeprecationWarning:gradio.queueing")
def test_submit_started_while_the_board_restarts_waits_for_it(tmp_path, capsys):
    """Issue 41 (board a): `leaderboard submit` started while the board restarted exited 2 at once with
    "check --url": --retries covered only the calls after the first connection. The first one is retried too."""
    import threading
    import time

    from mmjudge.cli import main
    from mmjudge.leaderboard.app import build_app, launch

    port = _free_port()
    demo = build_app(str(tmp_path / "board"), {**DEFAULTS, "demo": True, "judge": "dummy", "bootstrap": 20})
    started = threading.Event()

    def come_back() -> None:  # the board is back two seconds after the CLI started
        time.sleep(2.0)
        launch(demo, host="127.0.0.1", port=port, prevent_thread_lock=True, quiet=True)
        started.set()

    (tmp_path / "out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in demo_outputs(1)))
    threading.Thread(target=come_back, daemon=True).start()
    try:
        code = main(
            ["leaderboard", "submit", "--url", f"http://127.0.0.1:{port}", "--benchmark", "demo-inputs",
             "--file", str(tmp_path / "out.jsonl"), "--name", "late", "--no-wait"]
        )  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 0 and started.is_set(), err
        [stored] = Store(tmp_path / "board").submissions()
        assert out.splitlines() == [f"accepted: submission {stored.id}"]
        assert f"the board at http://127.0.0.1:{port} is unreachable" in err and "trying again in 1 s (1 of 5)" in err
        assert "check --url" not in err and "Traceback" not in err
    finally:
        started.wait(60)
        demo.close()


def test_a_board_that_never_comes_back_is_unreachable_in_one_line(tmp_path, capsys):
    from mmjudge.cli import main

    url = f"http://127.0.0.1:{_free_port()}"
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in demo_outputs(1)))
    code = main(
        ["leaderboard", "submit", "--url", url, "--benchmark", "demo-inputs", "--file", str(tmp_path / "out.jsonl"),
         "--name", "never", "--no-wait", "--retries", "1"]
    )  # fmt: skip
    _, err = capsys.readouterr()
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith(f"mmjudge leaderboard: error: the board at {url} is unreachable (ConnectError")
    assert "after 2 tries" in last and "check --url" not in last and "Traceback" not in err


class StreamResetProxy:
    """A loopback TCP proxy in front of the board that resets (TCP RST) the first event stream carrying a
    finished event, as a board restarting under a reading client does. One thread per connection (select):
    a reset needs the socket closed while no other thread is blocked reading it."""

    def __init__(self, upstream_port: int, marker: bytes = b"process_completed"):
        import socket
        import threading

        self.upstream_port, self.marker, self.cut = upstream_port, marker, 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                downstream, _ = self.sock.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pump, args=(downstream, upstream), daemon=True).start()

    def _pump(self, downstream, upstream) -> None:
        import select
        import socket
        import struct

        try:
            while True:
                readable, _, _ = select.select([downstream, upstream], [], [])
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        raise OSError("closed")
                    if source is upstream and self.cut == 0 and self.marker in data:
                        self.cut = 1
                        downstream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        downstream.close()  # RST: the client reads "Connection reset by peer"
                        upstream.close()
                        return
                    (upstream if source is downstream else downstream).sendall(data)
        except OSError:
            pass
        for s in (downstream, upstream):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.filterwarnings("ignore::DeprecationWarning:gradio.queueing")
def test_a_reset_event_stream_is_retried_without_gradio_clients_traceback(tmp_path, capsys):
    """Issue 41 (board b): a CLI run that recovered through its retry printed gradio_client's own traceback
    first (its event-stream reader thread calls traceback.print_exc() on a reset connection)."""
    from mmjudge.cli import main

    demo, client = launched(tmp_path / "board")
    proxy = StreamResetProxy(int(client.src.rstrip("/").rsplit(":", 1)[1]))
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(r) + "\n" for r in demo_outputs(1)))
    try:
        code = main(
            ["leaderboard", "submit", "--url", f"http://127.0.0.1:{proxy.port}", "--benchmark", "demo-inputs",
             "--file", str(tmp_path / "out.jsonl"), "--name", "reset", "--no-wait"]
        )  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 0 and proxy.cut == 1 and out.startswith("accepted: submission ")
        assert "dropped during /benchmarks" in err and "trying again in 1 s (1 of 5)" in err
        assert "Traceback" not in err and "Connection reset by peer" in err  # said once, in the retry line
    finally:
        proxy.close()
        demo.close()
