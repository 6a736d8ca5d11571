"""A toy of OpenAI's Files and Batches endpoints (standard library only), answering each batch line with the
same toy server's chat route, so a batch's answers are exactly the synchronous ones. Plugged into a
``toy_api_servers.ToyServer`` (``server.batch_api = BatchAPI(server)``) and driven by the official client.

Shapes follow OpenAI's API reference: ``POST /v1/files`` (multipart: ``purpose``, ``file``) → a file object;
``GET /v1/files/{id}/content`` → its bytes; ``POST /v1/batches`` → a batch (``validating``); ``GET
/v1/batches/{id}`` → it, moving to ``in_progress`` and then, unless ``hold`` is set, to ``completed`` (or
``expired`` after ``expire_after`` lines; ``tear = (line, chars)`` cuts that output line after ``chars``
characters, as a torn write leaves it) with an output file of ``{"id", "custom_id", "response":
{"status_code", "body"}, "error"}`` lines and an error file for the lines ``fail(body)`` rejects;
``GET /v1/batches`` → the list.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any


class BatchAPI:
    """The Files and Batches endpoints of one toy server. ``hold``: batches stay ``in_progress`` while set;
    ``fail(body)``: ``(status, message)`` to reject a line, else ``None``; ``expire_after``: the next batch
    to finish expires after answering that many lines (the rest are reported ``batch_expired``, as OpenAI does)."""

    def __init__(self, server: Any, fail: Callable[[dict], Any] | None = None):
        self.server = server
        self.fail = fail
        self.hold = threading.Event()
        self.expire_after: int | None = None
        self.tear: tuple[int, int] | None = None  # (output line, characters kept) of the next batch to finish
        self.files: dict[str, tuple[str, bytes]] = {}  # id -> (purpose, content)
        self.batches: dict[str, dict] = {}
        self.created: list[str] = []  # batch ids, in creation order (POST /v1/batches)
        self.retrieved: list[str] = []  # batch ids looked at (GET /v1/batches/{id})
        self.lines_answered = 0
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @staticmethod
    def handles(path: str) -> bool:
        return path.startswith(("/v1/files", "/v1/batches"))

    def handle(self, method: str, path: str, headers: Any, blob: bytes) -> tuple[int, Any, bytes | None]:
        path = path.split("?")[0]
        parts = path.strip("/").split("/")  # v1, files|batches, id?, content?
        with self._lock:
            if method == "POST" and path == "/v1/files":
                return (*self._upload(headers, blob), None)
            if method == "GET" and len(parts) == 4 and parts[1] == "files" and parts[3] == "content":
                found = self.files.get(parts[2])
                return (200, None, found[1]) if found else (404, {"error": {"message": "No such file"}}, None)
            if method == "POST" and path == "/v1/batches":
                return (*self._create(json.loads(blob)), None)
            if method == "GET" and path == "/v1/batches":
                data = sorted(self.batches.values(), key=lambda b: -b["created_at"])
                return 200, {"object": "list", "data": data, "has_more": False}, None
            if method == "GET" and len(parts) == 3 and parts[1] == "batches":
                return (*self._retrieve(parts[2]), None)
        return 404, {"error": {"message": f"no route {method} {path}"}}, None

    # ------------------------------------------------------------------------------------ routes
    def _upload(self, headers: Any, blob: bytes) -> tuple[int, dict]:
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(
            b"Content-Type: " + headers["Content-Type"].encode() + b"\r\n\r\n" + blob
        )
        fields = {part.get_param("name", header="content-disposition"): part for part in message.iter_parts()}
        purpose = fields["purpose"].get_content().strip()
        content = fields["file"].get_payload(decode=True)
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = (purpose, content)
        return 200, self._file(file_id, fields["file"].get_filename() or "input.jsonl", content, purpose)

    @staticmethod
    def _file(file_id: str, name: str, content: bytes, purpose: str) -> dict:
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": name, "purpose": purpose, "status": "processed"}  # fmt: skip

    def _create(self, body: dict) -> tuple[int, dict]:
        if body.get("input_file_id") not in self.files:
            return 400, {"error": {"message": "No such input file"}}
        batch_id = f"batch_{next(self._ids)}"
        lines = self.files[body["input_file_id"]][1].decode().splitlines()
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "validating",
            "created_at": int(time.time() * 1000) + len(self.batches),
            "output_file_id": None,
            "error_file_id": None,
            "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.created.append(batch_id)
        return 200, self.batches[batch_id]

    def _retrieve(self, batch_id: str) -> tuple[int, dict]:
        batch = self.batches.get(batch_id)
        if batch is None:
            return 404, {"error": {"message": "No such batch"}}
        self.retrieved.append(batch_id)
        if batch["status"] == "validating":
            batch["status"] = "in_progress"
        elif batch["status"] == "in_progress" and not self.hold.is_set():
            self._finish(batch)
        return 200, batch

    def _finish(self, batch: dict) -> None:
        """Answer every line (the chat route's answer, or the rejection ``fail`` gives) and write the files."""
        outputs, errors, expired = [], [], False
        lines = [json.loads(x) for x in self.files[batch["input_file_id"]][1].decode().splitlines() if x.strip()]
        for k, line in enumerate(lines):
            entry = {"id": f"req_{k}", "custom_id": line["custom_id"]}
            if self.expire_after is not None and k >= self.expire_after:
                expired = True
                errors.append({**entry, "response": None,
                               "error": {"code": "batch_expired", "message": "This request could not be executed "
                                         "before the completion window expired."}})  # fmt: skip
                continue
            rejected = self.fail(line["body"]) if self.fail else None
            if rejected:
                status, message = rejected
                errors.append({**entry, "response": {"status_code": status, "body": {"error": {"message": message}}},
                               "error": None})  # fmt: skip
                continue
            status, body = self.server.chat(line["body"])
            (outputs if status == 200 else errors).append(
                {**entry, "response": {"status_code": status, "body": body}, "error": None}
            )
            self.lines_answered += 1
        for name, rows in (("output_file_id", outputs), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{next(self._ids)}"
                lines = [json.dumps(r) for r in rows]
                if name == "output_file_id" and self.tear is not None:
                    line, kept = self.tear
                    lines[line] = lines[line][:kept]
                    self.tear = None  # one torn line; the next batches are whole
                self.files[file_id] = ("batch_output", "".join(x + "\n" for x in lines).encode())
                batch[name] = file_id
        batch["status"] = "expired" if expired else "completed"
        self.expire_after = None  # one batch expires; the next ones complete
        batch["request_counts"] = {"total": len(lines), "completed": len(outputs), "failed": len(errors)}
