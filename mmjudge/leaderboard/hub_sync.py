"""Optional mirror of the board on Hugging Face dataset repos, the pattern hosted leaderboards use.

A ``requests`` dataset holds one JSON file per submission (``requests/<benchmark>/<id>.json``) with
its status — ``PENDING``, ``RUNNING``, ``FINISHED`` or ``FAILED`` as the Hub leaderboard template
spells them — and a ``results`` dataset one JSON per finished submission. Sync is off unless the
settings name both repos; it goes through any object with ``huggingface_hub.HfApi``'s
``upload_file`` and ``list_repo_files`` (the tests pass a stand-in), and a failed upload is logged
and retried on the next sync, never lost: a submission counts as synced only once its upload returned.

>>> class FakeApi:
...     def __init__(self): self.files = {}
...     def upload_file(self, path_or_fileobj, path_in_repo, repo_id, repo_type, commit_message):
...         self.files[(repo_id, path_in_repo)] = path_or_fileobj
...     def list_repo_files(self, repo_id, repo_type):
...         return [p for (r, p) in self.files if r == repo_id]
>>> import tempfile
>>> from mmjudge.leaderboard.store import Store
>>> store = Store(tempfile.mkdtemp())
>>> sid = store.add_submission(track="models", benchmark="demo-inputs", name="m", submitter="s", data=b"x")
>>> api = FakeApi()
>>> sync = HubSync(api, "org/requests", "org/results")
>>> sync.sync(store)
1
>>> api.list_repo_files("org/requests", "dataset") == [f"requests/demo-inputs/{sid}.json"]
True
>>> sync.sync(store)  # nothing changed since
0
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from mmjudge.leaderboard.records import Status, Submission

logger = logging.getLogger(__name__)
_PUBLIC = (
    "id",
    "track",
    "benchmark",
    "name",
    "link",
    "description",
    "submitter",
    "content_hash",
    "reason",
    "signature",
    "created_at",
    "started_at",
    "finished_at",
    "attempts",
    "hidden",
)


class HubSync:
    """Push changed submissions (and their results) to the two dataset repos."""

    def __init__(self, api: Any, requests_repo: str, results_repo: str):
        self.api, self.requests_repo, self.results_repo = api, requests_repo, results_repo

    @classmethod
    def from_settings(cls, settings: dict, api: Any = None) -> HubSync | None:
        """None unless ``hub_requests_repo`` and ``hub_results_repo`` are set (the token comes from
        ``HF_TOKEN`` / the Hub login, read by ``huggingface_hub`` itself)."""
        requests_repo, results_repo = settings.get("hub_requests_repo"), settings.get("hub_results_repo")
        if not requests_repo or not results_repo:
            return None
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi()
        return cls(api, requests_repo, results_repo)

    def request_document(self, row: Submission) -> dict:
        doc = {k: getattr(row, k) for k in _PUBLIC}
        doc["hidden"] = int(row.hidden)  # as the database stores it (0 / 1)
        doc["status"] = row.status.hub  # the template's spelling (FINISHED for DONE)
        return doc

    def _upload(self, repo: str, path: str, doc: dict, message: str) -> None:
        data = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False).encode("utf-8")
        self.api.upload_file(
            path_or_fileobj=data, path_in_repo=path, repo_id=repo, repo_type="dataset", commit_message=message
        )

    def sync(self, store: Any) -> int:
        """Upload every submission changed since its last sync; returns how many were pushed."""
        pushed = 0
        for row in store.submissions(include_hidden=True):
            if row.synced_at is not None and row.synced_at >= row.updated_at:
                continue
            started = time.time()
            try:
                path = f"requests/{row.benchmark}/{row.id}.json"
                self._upload(self.requests_repo, path, self.request_document(row), f"{row.id}: {row.status}")
                if row.status is Status.DONE:
                    result = store.result(row.id)
                    if result is not None:
                        doc = {
                            "id": row.id,
                            "name": row.name,
                            "track": row.track,
                            "benchmark": row.benchmark,
                            "signature": result.signature,
                            "summary": result.summary,
                        }
                        self._upload(
                            self.results_repo, f"results/{row.benchmark}/{row.id}.json", doc, f"results of {row.id}"
                        )
            except Exception as err:  # the Hub being down must not stop the board; retried next time
                logger.warning("hub sync of %s failed: %s", row.id, err)
                continue
            store.mark_synced(row.id, started)
            pushed += 1
        return pushed

    def remote_requests(self) -> list[str]:
        """Paths of the request files on the Hub."""
        return [
            p
            for p in self.api.list_repo_files(repo_id=self.requests_repo, repo_type="dataset")
            if p.startswith("requests/")
        ]
