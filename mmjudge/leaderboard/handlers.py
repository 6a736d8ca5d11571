"""What the board's page and HTTP API do when asked: one :class:`Board` holds the store and the
protection state, and each method answers one event. The layout (:mod:`mmjudge.leaderboard.layout`)
only wires these to components; the data comes from :mod:`mmjudge.leaderboard.views` and the tracks.

API replies are plain text or JSON (never HTML-escaped); the page shows the same messages as Markdown
through :func:`~mmjudge.report.markdown_text`, the one escaping helper.

No ``from __future__ import annotations`` here, and gradio is a module-level name: Gradio injects a
``gr.Request`` only into parameters whose annotation resolves to ``gr.Request``. Without the request,
the rate limit would key on whatever the client typed (issue 21).
"""

import re
import tempfile
from typing import Any

import gradio as gr

from mmjudge.leaderboard import views
from mmjudge.leaderboard.benchmarks import available_benchmarks, configure, get_benchmark
from mmjudge.leaderboard.client import describe
from mmjudge.leaderboard.export import example_file, guide, inputs_file, line_format
from mmjudge.leaderboard.intake import submit_path
from mmjudge.leaderboard.protection import AdminGuard, RateLimit
from mmjudge.leaderboard.ranking import ALL
from mmjudge.leaderboard.records import Status
from mmjudge.leaderboard.settings import DEFAULTS, load_settings
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.tracks import get_track, track_names
from mmjudge.report import markdown_text

EXPORTS = "exports"  # under the data dir: benchmark inputs and example submissions, built once
_RECEIVED = re.compile(r"received: submission ([0-9a-f]{32})")


def client_key(request: Any) -> str:
    """Who sends a request, the rate limit's and the admin throttle's key: the signed-in Hub user, else
    the network address — never a field the client fills in. A request without either (not served
    over HTTP) shares the one key ``ip:unknown``.

    >>> client_key(None)
    'ip:unknown'
    """
    user = getattr(request, "username", None)
    if user:
        return f"user:{user}"
    host = getattr(getattr(request, "client", None), "host", None)
    return f"ip:{host}" if host else "ip:unknown"


def board_url(request: Any) -> str | None:
    """The address visitors reach the board at (behind a proxy such as a Space's, the forwarded one),
    for the commands in the guide; None outside a request."""
    headers = getattr(request, "headers", None)
    if not headers:
        return None
    host = headers.get("x-forwarded-host") or headers.get("host")
    if not host:
        return None
    proto = headers.get("x-forwarded-proto") or "http"
    return f"{proto}://{host}"


def page_link(sid: str) -> str:
    """A Markdown link that opens the page on one submission (the page reads ``?submission=``)."""
    return f"[Open the submission's page](?submission={sid})" if re.fullmatch(r"[0-9a-f]{32}", sid) else ""


class Board:
    """The board behind one page: its store, settings, rate limit, admin throttle and download folders."""

    def __init__(self, data_dir: str, settings: dict | None = None):
        self.settings = {**DEFAULTS, **(settings if settings is not None else load_settings(data_dir))}
        if self.settings.get("benchmarks"):
            configure(self.settings["benchmarks"])
        self.store = Store(data_dir)
        self.rate = RateLimit(int(self.settings["rate_limit"]), float(self.settings["rate_window_s"]))
        self.max_bytes = int(self.settings["max_upload_bytes"])
        self.guard = AdminGuard(float(self.settings["admin_delay_s"]), float(self.settings["admin_max_delay_s"]))
        self.exports = self.store.data_dir / EXPORTS
        # CSV / JSON of the tables shown; removed with the board (or at exit), so tests and restarts leave nothing
        self._results = tempfile.TemporaryDirectory(prefix="mmjudge-board-results-")
        self.results_dir = self._results.name

    # ------------------------------------------------------------------------------- the tables
    def first_benchmark(self, track: str) -> str | None:
        names = available_benchmarks(track)
        return views.default_benchmark(self.store, track) or (names[0] if names else None)

    def groups(self, track: str, benchmark: str | None = None, current: Any = None):
        """The signature-group selector of one benchmark (keeping ``current`` when it still exists)."""
        choices = views.signature_choices(self.store, track, benchmark or None)
        values = [value for _, value in choices]
        return gr.Dropdown(choices=choices, value=current if current in values else (values[0] if values else None))

    def _downloads(self, records: list, stem: str) -> tuple:
        if not records:
            return gr.DownloadButton(value=None, interactive=False), gr.DownloadButton(value=None, interactive=False)
        csv_path, json_path = views.write_results(records, self.results_dir, stem)
        return gr.DownloadButton(value=csv_path, interactive=True), gr.DownloadButton(value=json_path, interactive=True)

    def table(self, track: str, benchmark: str | None, group: Any, *values: Any) -> tuple:
        """A track's tab: (table, caption, [plot,] CSV download, JSON download) for the filter ``values``
        (in the order the track declares its filters)."""
        spec = get_track(track)
        filters = {f.key: (v if v is not None else f.value) for f, v in zip(spec.filters, values)}
        view = views.track_view(self.store, track, benchmark, group or 0, filters, self.settings)
        records = views.results_records(
            self.store, track, benchmark, group=group or 0, settings=self.settings, filters=filters
        )
        stem = "-".join([track, benchmark or "board", *(str(v) for v in filters.values() if v)])
        plot = (gr.LinePlot(value=view.plot, colors_in_legend=spec.plot.legend(view.plot)),) if spec.plot else ()
        table = gr.Dataframe(value=view.table, column_widths=spec.column_widths(list(view.table.columns)))
        return (table, view.caption, *plot, *self._downloads(records, re.sub(r"[^\w.-]+", "_", stem)))

    def version(self) -> list:
        """The store's version (what :meth:`refresh` compares with)."""
        return list(self.store.version())

    def refresh(self, seen: Any, *state: Any) -> tuple:
        """What the page's timer runs: when the store changed since ``seen`` (a job finished, was hidden,
        the queue moved), every track's group selector and table and the queue, rebuilt; else nothing
        (``gr.skip()``). ``state`` holds each track's (benchmark, group, *filters) in page order."""
        version = self.version()
        outputs: list[Any] = []
        changed = version != seen
        for track in track_names():
            n = 2 + len(get_track(track).filters)
            benchmark, group, *values = state[:n]
            state = state[n:]
            if changed:
                outputs += [self.groups(track, benchmark, group), *self.table(track, benchmark, group, *values)]
            else:
                outputs += [gr.skip()] * (1 + 4 + bool(get_track(track).plot))
        outputs.append(views.queue_view(self.store) if changed else gr.skip())
        return (version, *outputs)

    # ------------------------------------------------------------------------------- submitting
    def receive(self, track, benchmark, name, submitter, link, description, upload, request) -> str:
        """The plain-text reply to one upload (the API's answer; the form shows it as Markdown)."""
        client = client_key(request)
        if not str(submitter or "").strip():
            submitter = client[len("user:") :] if client.startswith("user:") else "anonymous"  # never the address
        path = upload if isinstance(upload, str) or upload is None else getattr(upload, "name", None)
        receipt = submit_path(
            self.store,
            path,
            max_bytes=self.max_bytes,
            track=track,
            benchmark=benchmark,
            name=name,
            submitter=submitter,
            link=link,
            description=description,
            rate_limit=self.rate,
            client=client,
        )
        return f"✅ {receipt.message}" if receipt.accepted else f"❌ Not accepted — {receipt.message}"

    def submit_api(
        self, track, benchmark, name, submitter, link, description, upload, request: gr.Request = None
    ) -> str:
        return self.receive(track, benchmark, name, submitter, link, description, upload, request)

    def submit_form(
        self, track, benchmark, name, submitter, link, description, upload, request: gr.Request = None
    ) -> str:
        reply = self.receive(track, benchmark, name, submitter, link, description, upload, request)
        found = _RECEIVED.search(reply)
        return markdown_text(reply) + (f"  \n{page_link(found.group(1))}" if found else "")

    def follow_start(self, reply: str) -> tuple:
        """After the form's reply: follow the new submission (its status updates in place) when there is one."""
        found = _RECEIVED.search(str(reply or "").replace("\\", ""))
        sid = found.group(1) if found else ""
        return sid, gr.Timer(active=bool(sid))

    def follow(self, sid: str, reply: str) -> tuple:
        """The form's reply with the followed submission's status now; the timer stops once it is final."""
        if not sid:
            return gr.skip(), gr.Timer(active=False)
        now = views.standing(self.store, sid, self.settings)
        first = str(reply or "").split("  \n", 1)[0]
        text = f"{first}  \n**Now:** {markdown_text(describe(now))}  \n{page_link(sid)}"
        return text, gr.Timer(active=not Status(now["status"]).final)

    # ----------------------------------------------------------------------------------- admin
    def admin(self, token: str, sid: str, action: str, request: gr.Request = None) -> str:
        """Plain text (the API's answer); the page shows it as Markdown."""
        try:
            self.guard.check(token, client_key(request))
        except PermissionError as err:
            return f"❌ {err}"
        sid = (sid or "").strip()
        done = {
            "hide": lambda: self.store.set_hidden(sid, True),
            "unhide": lambda: self.store.set_hidden(sid, False),
            "delete": lambda: self.store.delete(sid),
            "re-run": lambda: self.store.requeue(sid),
        }.get(action)
        if done is None:
            return f"❌ unknown action {action!r}"
        return f"✅ {action} {sid}" if done() else f"❌ no submission {sid!r}"

    def admin_form(self, token: str, sid: str, action: str, request: gr.Request = None) -> str:
        return markdown_text(self.admin(token, sid, action, request))

    # ------------------------------------------------------------------------------ taking part
    def benchmarks_for(self, track: str):
        names = available_benchmarks(track)
        return gr.Dropdown(choices=names, value=names[0] if names else None)

    def take_part(self, name: str | None, request: gr.Request = None):
        """The guide and the three downloads of one benchmark (files built on first use)."""
        try:
            bench = get_benchmark(name or "")
        except ValueError as err:
            none = gr.DownloadButton(value=None, interactive=False)
            return markdown_text(err), none, none, none
        text = guide(bench, board_url(request), self.settings)
        files = [
            inputs_file(bench, self.exports, "zip", self.settings),
            inputs_file(bench, self.exports, "parquet", self.settings),
            example_file(bench, self.exports),
        ]
        return (text, *[gr.DownloadButton(value=str(f), interactive=True) for f in files])

    def open_page(self, request: gr.Request = None) -> tuple:
        """A page opened at ``?submission=<id>`` (the link in a reply) shows that submission."""
        params = getattr(request, "query_params", None) or {}
        sid = str(params.get("submission") or "").strip()
        if not sid:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        page, table = views.submission_view(self.store, sid, self.settings)
        return gr.Tabs(selected="submission"), sid, page, table

    # ------------------------------------------------------------------------------- API only
    def benchmarks_api(self) -> list:
        return [line_format(get_benchmark(n), self.settings) for n in available_benchmarks()]

    def inputs_api(self, name: str, fmt: str) -> str:
        return str(inputs_file(get_benchmark(str(name or "")), self.exports, str(fmt or "zip"), self.settings))

    def example_api(self, name: str) -> str:
        return str(example_file(get_benchmark(str(name or "")), self.exports))

    def status_api(self, sid: str) -> dict:
        return views.standing(self.store, sid, self.settings)

    def results_api(self, track: str, benchmark: str, task: str, rank_by: str) -> list:
        return views.results_records(
            self.store, track or "models", benchmark or None, task or ALL, rank_by or "", 0, self.settings
        )

    def table_api(self, track: str, *args: str) -> list:
        """The legacy ``/<track>_table`` endpoints: the tab's table as records, for the parameters the
        track declares (``Track.table_api``)."""
        spec = get_track(track)
        given = dict(zip(spec.table_api, args))
        filters = {f.key: given.get(f.key) or f.value for f in spec.filters}
        view = views.track_view(self.store, track, given.get("benchmark") or None, 0, filters, self.settings)
        return view.table.to_dict(orient="records")

    def queue(self):
        return views.queue_view(self.store)

    def submission(self, sid: str) -> tuple:
        return views.submission_view(self.store, sid, self.settings)
