"""The `openai` judge backend's own cost: requests/s against a local stub server, same run.

    python benchmarks/api_client_throughput.py [--n 200] [--latency-ms 0 200] [--concurrency 1 8 32]

The stub (127.0.0.1, standard library) answers every chat completion with the same small logprobs
payload after a fixed delay, so the numbers are the client's overhead and how well concurrency hides
server latency; a real server's speed is not measured here. Prints requests/s per (latency,
max_concurrency) and the ratio against max_concurrency=1 at the same latency.
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
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Score: 4"}, "finish_reason": "stop",
                 "logprobs": {"content": [{"token": "4", "logprob": math.log(0.7),
                                           "top_logprobs": [{"token": "4", "logprob": math.log(0.7)}]}]}}],
    "usage": {"prompt_tokens": 300, "completion_tokens": 1},
}  # fmt: skip


class _Server(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True


def stub(latency: float) -> _Server:
    blob = json.dumps(ANSWER).encode()

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
    args = parser.parse_args()
    print("stub server on 127.0.0.1: client overhead and latency hiding only, not a real server's speed")
    for latency in args.latency_ms:
        server = stub(latency / 1000)
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        baseline = None
        for conc in args.concurrency:
            judge = OpenAIJudge(base_url=url, prefill="none", max_concurrency=conc)
            # at 1 request in flight a slow stub takes n × latency: fewer requests keep it short
            n = args.n if conc > 1 or latency == 0 else max(10, args.n // 10)
            requests = [RatingRequest([Turn("user", f"Rate caption {i}.")]) for i in range(n)]
            start = time.perf_counter()
            results = judge.rate(requests, progress=False)
            rate = n / (time.perf_counter() - start)
            assert all(abs(r.raw[3] - 0.7) < 1e-9 for r in results)
            baseline = baseline or rate
            print(f"latency {latency:6.0f} ms  max_concurrency {conc:3d}: {rate:8.1f} req/s  ({rate / baseline:5.2f}x of concurrency {args.concurrency[0]})")
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
