"""The `openai` judge backend's own cost: requests/s against local stub servers, same run.

    python benchmarks/api_client_throughput.py [--n 200] [--latency-ms 0 200] [--concurrency 1 8 32]
    python benchmarks/api_client_throughput.py --servers 1 2 4 --serial --latency-ms 50 --concurrency 8

The stub (127.0.0.1, standard library) answers every chat completion with the same small logprobs
payload after a fixed delay, so the numbers are the client's overhead and how well concurrency hides
server latency; a real server's speed is not measured here. Prints requests/s per (servers, latency,
max_concurrency) and the ratio against the first row at the same latency. ``--serial`` makes each stub
answer one request at a time (a server with one slot, like ``mmjudge serve``), so a fleet of N stubs
(``--servers N``: one judge, ``base_url`` listing all of them) shows how requests spread over the fleet.
"""

from __future__ import annotations

import argparse
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from mmjudge.judges import RatingRequest, Turn
from mmjudge.judges.openai import OpenAIJudge

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
    request_queue_size = 256
    daemon_threads = True


def stub(latency: float, serial: bool = False) -> _Server:
    blob = json.dumps(ANSWER).encode()
    slot = threading.Lock()  # with `serial`: one request at a time, as a server with one slot

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            data = json.dumps({"data": [{"id": "stub"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            if serial:
                with slot:
                    time.sleep(latency)
            else:
                time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="requests per measurement")
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 200.0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--servers", type=int, nargs="+", default=[1], help="fleet sizes (stubs behind one judge)")
    parser.add_argument("--serial", action="store_true", help="each stub answers one request at a time")
    args = parser.parse_args()
    print(
        "stub servers on 127.0.0.1: client overhead, latency hiding and fleet spreading only, not a real server's speed"
    )
    for latency in args.latency_ms:
        baseline = None
        for fleet in args.servers:
            servers = [stub(latency / 1000, args.serial) for _ in range(fleet)]
            urls = [f"http://127.0.0.1:{s.server_address[1]}/v1" for s in servers]
            for conc in args.concurrency:
                # Every mode given: no server identification, only ratings are timed.
                judge = OpenAIJudge(base_url=urls, model="stub", prefill="none", mass="top-k", max_concurrency=conc)
                # at 1 request in flight a slow stub takes n × latency: fewer requests keep it short
                n = args.n if conc > 1 or latency == 0 else max(10, args.n // 10)
                requests = [RatingRequest([Turn("user", f"Rate caption {i}.")]) for i in range(n)]
                start = time.perf_counter()
                results = judge.rate(requests, progress=False)
                rate = n / (time.perf_counter() - start)
                assert all(r.error is None and abs(r.raw[3] - 0.7) < 1e-9 for r in results)
                baseline = baseline or rate
                print(
                    f"latency {latency:6.0f} ms  servers {fleet:2d}  max_concurrency {conc:3d}: {rate:8.1f} req/s  "
                    f"({rate / baseline:5.2f}x of the first row)"
                )
            for server in servers:
                server.shutdown()
                server.server_close()


if __name__ == "__main__":
    main()
