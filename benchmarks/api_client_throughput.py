"""The `openai` judge backend's own cost: requests/s against a local stub server, same run.

    python benchmarks/api_client_throughput.py [--n 400] [--repeat 3]
    python benchmarks/api_client_throughput.py --latency-ms 50 --concurrency 8 --servers 1 2 4 --serial

The stub (127.0.0.1, standard library, in its own process so the client's cost is not mixed with the
server's) answers every chat completion with the same small logprobs payload after a fixed delay, and says
it is vLLM (``GET /version``), so the judge's default concurrency is the one it gives a vLLM server. The
numbers are the client's overhead and how well concurrency hides latency; a real server's speed is not
measured here. Three parts:

1. at 0 ms, the judge through the official ``openai`` client against the same judge with the ``urllib``
   transport it had before (one fresh connection per request), at 1, 8 and 32 requests in flight;
2. at 200 ms, the judge's default against a vLLM-kind server (``max_concurrency="auto"``) and fixed values;
3. batch mode's estimated price against the synchronous one for the same requests (``prices.toml``).

Each figure is the median of ``--repeat`` runs (this machine is shared and busy), in requests per second of
wall clock and per second of the client process's own CPU (what the client costs, whatever the load).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import socket
import statistics
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmjudge.judges.openai.judge import OpenAIJudge
from mmjudge.judges.requests import RatingRequest, Turn

ANSWER = {
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Score: 4"},
            "finish_reason": "stop",
            "logprobs": {
                "content": [
                    {"token": "4", "logprob": math.log(0.7), "top_logprobs": [{"token": "4", "logprob": math.log(0.7)}]}
                ]
            },
        }
    ],
    "usage": {"prompt_tokens": 300, "completion_tokens": 1},
}


class _Server(ThreadingHTTPServer):
    request_queue_size = 512
    daemon_threads = True

    def process_request(self, request, client_address):
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as uvicorn does
        super().process_request(request, client_address)


def _serve(latency: float, serial: bool, ports: multiprocessing.Queue) -> None:
    blob = json.dumps(ANSWER).encode()
    slot = threading.Lock()  # with `serial`: one request at a time, as a server with one slot

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _send(self, data: bytes, status: int = 200) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send(json.dumps({"data": [{"id": "stub", "owned_by": "vllm"}]}).encode())
            elif self.path == "/version":  # vLLM's route: the judge takes the stub for a vLLM server
                self._send(b'{"version": "stub"}')
            else:
                self._send(b'{"detail": "Not Found"}', 404)

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            if serial:
                with slot:
                    time.sleep(latency)
            elif latency:
                time.sleep(latency)
            self._send(blob)

    server = _Server(("127.0.0.1", 0), Handler)
    ports.put(server.server_address[1])
    server.serve_forever()


def start_stub(latency: float, serial: bool = False) -> tuple[multiprocessing.Process, str]:
    ports: multiprocessing.Queue = multiprocessing.Queue()
    process = multiprocessing.Process(target=_serve, args=(latency, serial, ports), daemon=True)
    process.start()
    return process, f"http://127.0.0.1:{ports.get(timeout=30)}/v1"


def use_urllib(judge: OpenAIJudge) -> OpenAIJudge:
    """The same judge with the transport it had before the official client: ``urllib``, one fresh connection
    per request (the JSON body, headers, decoding and reading are the same steps)."""
    url = judge.servers[0].url + "/chat/completions"

    def chat(fields: dict, extra_body: dict | None = None, **_: object) -> dict:
        data = json.dumps({**fields, **(extra_body or {})}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        request = urllib.request.Request(url, data=data, method="POST", headers=headers)
        with urllib.request.urlopen(request, timeout=judge.timeout) as reply:
            return json.loads(reply.read().decode("utf-8"))

    judge.transport.chat = chat  # type: ignore[method-assign]
    return judge


def measure(
    urls: list[str], concurrency: int | str, n: int, repeat: int, transport: str = "client"
) -> tuple[float, float]:
    """Median requests/s over ``repeat`` runs, wall clock and per second of this process's CPU."""
    rates, per_cpu = [], []
    for _ in range(repeat):
        # Every mode given: no identification requests are timed (the default asks the kind on first send).
        judge = OpenAIJudge(base_url=urls, model="stub", prefill="none", mass="top-k", max_concurrency=concurrency)
        if transport == "urllib":
            use_urllib(judge)
        warm = [RatingRequest([Turn("user", f"warm up {i}")]) for i in range(64)]
        judge.rate(warm, progress=False)  # connections, threads, the server's kind
        requests = [RatingRequest([Turn("user", f"Rate caption {i}.")]) for i in range(n)]
        start, cpu = time.perf_counter(), time.process_time()
        results = judge.rate(requests, progress=False)
        rates.append(n / (time.perf_counter() - start))
        per_cpu.append(n / max(time.process_time() - cpu, 1e-9))
        assert all(r.error is None and abs(r.raw[3] - 0.7) < 1e-9 for r in results)
    return statistics.median(rates), statistics.median(per_cpu)


def batch_price_ratio(model: str = "gpt-4o-2024-08-06", n: int = 1000) -> tuple[float, float]:
    judge = OpenAIJudge(base_url="http://127.0.0.1:9/v1", model=model, prefill="none", mass="top-k")
    estimate = judge.estimate([RatingRequest([Turn("user", f"Rate caption {i}. " * 40)]) for i in range(n)])
    return estimate.cost(judge.price()), estimate.cost(judge.price(), batch=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=400, help="requests per measurement")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is printed)")
    parser.add_argument("--latency-ms", type=float, nargs="+", help="custom: these latencies only")
    parser.add_argument("--concurrency", nargs="+", help="custom: these max_concurrency values ('auto' too)")
    parser.add_argument(
        "--servers", type=int, nargs="+", default=[1], help="custom: fleet sizes (stubs behind one judge)"
    )
    parser.add_argument("--serial", action="store_true", help="custom: each stub answers one request at a time")
    args = parser.parse_args()
    print("stub servers on 127.0.0.1 (own process): client overhead and latency hiding only, not a server's speed")
    if args.latency_ms:
        custom(args)
        return
    stub, url = start_stub(0.0)
    for conc in (1, 8, 32):
        (old, old_cpu), (new, new_cpu) = (measure([url], conc, args.n, args.repeat, t) for t in ("urllib", "client"))
        print(f"latency    0 ms  max_concurrency {conc:3d}: urllib {old:7.1f} req/s ({old_cpu:6.0f} per CPU-s), "
              f"openai client {new:7.1f} req/s ({new_cpu:6.0f} per CPU-s)")  # fmt: skip
    stub.terminate()
    stub, url = start_stub(0.2)
    n = max(args.n, 400)
    for conc in ("auto", 8, 32, 64):
        rate = measure([url], conc, n, 1, "client")[0]
        label = "auto (vLLM: 64)" if conc == "auto" else f"{conc}"
        print(f"latency  200 ms  max_concurrency {label:>15s}: {rate:7.1f} req/s")
    stub.terminate()
    sync, batch = batch_price_ratio()
    print(
        f"estimate, 1,000 requests to gpt-4o-2024-08-06: ${sync:.4f} synchronous, ${batch:.4f} batch "
        f"({batch / sync:.0%})"
    )


def custom(args: argparse.Namespace) -> None:
    for latency in args.latency_ms:
        for fleet in args.servers:
            stubs = [start_stub(latency / 1000, args.serial) for _ in range(fleet)]
            for conc in args.concurrency or ["auto", 8, 32]:
                conc = conc if conc == "auto" else int(conc)
                rate = measure([u for _, u in stubs], conc, args.n, args.repeat)[0]
                print(f"latency {latency:6.0f} ms  servers {fleet:2d}  max_concurrency {conc!s:>4s}: {rate:8.1f} req/s")
            for process, _ in stubs:
                process.terminate()


if __name__ == "__main__":
    main()
