"""The leaderboard's Gradio 6 app: rankings per track, how to take part (downloads of each benchmark's
inputs and an example submission), a submission form, the queue, a page per submission, an admin
panel. Layout only — the data comes from :mod:`mmjudge.leaderboard.views` and
:mod:`mmjudge.leaderboard.export`, submissions go through :func:`mmjudge.leaderboard.intake.submit_path`,
scoring is the worker's.

HTTP API (``gradio_client``; what ``mmjudge leaderboard download`` / ``submit`` use):

==========================  =======================================================================
``/benchmarks``             every benchmark with its track, items, tasks and line format (JSON)
``/benchmark_inputs``       (benchmark, ``zip`` | ``parquet``) → the inputs file
``/example_submission``     (benchmark) → an example submission file
``/submit``                 (track, benchmark, name, submitter, link, description, file) → one line
``/status``                 (submission id) → status, queue position, and once DONE its ranked row (JSON)
``/results``                (track, benchmark, task, rank by) → the ranked rows with intervals (JSON)
``/models_table``, ``/metrics_table``, ``/queue``, ``/submission``, ``/admin``
==========================  =======================================================================

API replies are plain text or JSON (never HTML-escaped); the page shows the same messages as Markdown
through :func:`~mmjudge.report.markdown_text`, the one escaping helper.

No ``from __future__ import annotations`` here: Gradio injects a ``gr.Request`` only into parameters
whose annotation *is* ``gr.Request``, and with postponed annotations the hint would stay the string
"gr.Request", which Gradio cannot resolve (gradio is imported inside :func:`build_app`). Without the
request, the rate limit would key on whatever the client typed (issue 21).
"""

import os
import tempfile
from pathlib import Path
from typing import Any

from mmjudge.leaderboard import views
from mmjudge.leaderboard.benchmarks import CRITERIA, MODEL_TASKS, available_benchmarks, configure, get_benchmark
from mmjudge.leaderboard.export import example_file, guide, inputs_file, line_format
from mmjudge.leaderboard.intake import submit_path, upload_cap
from mmjudge.leaderboard.protection import AdminGuard, RateLimit
from mmjudge.leaderboard.ranking import ALL
from mmjudge.leaderboard.settings import DEFAULTS, load_settings
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard.validation import MAX_TEXT_CHARS, human_size
from mmjudge.report import markdown_text

ABOUT = """Two tracks. **Models**: run your model on a benchmark's inputs (download them under *How to take
part*) and upload its outputs as JSONL lines `{"id": …, "text": …}`; they are scored with HarmonicEval and
ranked overall, per task and per criterion. **Metrics**: upload your metric's per-item scores as
`{"id": …, "score": …}` (optionally one column per criterion) for a human-judgment benchmark; the
meta-evaluation ranks metrics by agreement with humans (Kendall τ, best-of-N accuracy). Every row shows
its 95% bootstrap interval and whether it is separable from the row above; rows are ranked together only
under comparable signatures (same judge, prompts, γ / same protocol)."""
DEMO_NOTE = (
    "**Demo mode**: the judge is the hash-based `dummy` stand-in and the demo judgments are synthetic — "
    "the plumbing is real, the numbers mean nothing."
)
CSS = ".lb-note {font-size: 0.9em; opacity: 0.85}"
EXPORTS = "exports"  # under the data dir: benchmark inputs and example submissions, built once


def build_app(data_dir: str, settings: dict | None = None):
    """The Blocks app over the data dir (settings from ``<data_dir>/settings.json`` unless given)."""
    import gradio as gr

    settings = {**DEFAULTS, **(settings if settings is not None else load_settings(data_dir))}
    if settings.get("benchmarks"):
        configure(settings["benchmarks"])
    store = Store(data_dir)
    rate = RateLimit(int(settings["rate_limit"]), float(settings["rate_window_s"]))
    max_bytes = int(settings["max_upload_bytes"])
    guard = AdminGuard(float(settings["admin_delay_s"]), float(settings["admin_max_delay_s"]))
    model_benchmarks = available_benchmarks("models")
    metric_benchmarks = available_benchmarks("metrics")
    exports = store.data_dir / EXPORTS
    results_dir = tempfile.mkdtemp(prefix="mmjudge-board-results-")  # CSV / JSON of the tables shown

    # ------------------------------------------------------------------------------- handlers
    def groups(track: str, benchmark: str | None = None):
        choices = views.signature_choices(store, track, benchmark or None)
        return gr.Dropdown(choices=choices, value=choices[0][1] if choices else None)

    def downloads(records: list, stem: str):
        if not records:
            return gr.DownloadButton(value=None, interactive=False), gr.DownloadButton(value=None, interactive=False)
        csv_path, json_path = views.write_results(records, results_dir, stem)
        return gr.DownloadButton(value=csv_path, interactive=True), gr.DownloadButton(value=json_path, interactive=True)

    def models_table(benchmark, task, rank_by, columns, group):
        frame, caption, plot = views.models_view(store, task, rank_by, columns, group, benchmark, settings)
        records = views.results_records(store, "models", benchmark, task, rank_by, group, settings)
        return (
            frame,
            caption,
            plot,
            *downloads(records, f"models-{benchmark or 'board'}-{task or ALL}-{rank_by or 'overall'}"),
        )

    def metrics_table(benchmark, task, criterion, group):
        frame, caption = views.metrics_view(store, benchmark, task, criterion, group)
        records = views.results_records(store, "metrics", benchmark, task, "", group, settings)
        return (frame, caption, *downloads(records, f"metrics-{benchmark or 'board'}-{task or ALL}"))

    def receive(track, benchmark, name, submitter, link, description, upload, request) -> str:
        """The plain-text reply to one upload (the API's answer; the form shows it as Markdown)."""
        client = client_key(request)
        if not str(submitter or "").strip():
            submitter = client[len("user:") :] if client.startswith("user:") else "anonymous"  # never the address
        path = upload if isinstance(upload, str) or upload is None else getattr(upload, "name", None)
        receipt = submit_path(
            store,
            path,
            max_bytes=max_bytes,
            track=track,
            benchmark=benchmark,
            name=name,
            submitter=submitter,
            link=link,
            description=description,
            rate_limit=rate,
            client=client,
        )
        return f"✅ {receipt.message}" if receipt.accepted else f"❌ Not accepted — {receipt.message}"

    def submit_api(track, benchmark, name, submitter, link, description, upload, request: gr.Request = None) -> str:
        return receive(track, benchmark, name, submitter, link, description, upload, request)

    def submit_form(track, benchmark, name, submitter, link, description, upload, request: gr.Request = None) -> str:
        return markdown_text(receive(track, benchmark, name, submitter, link, description, upload, request))

    def admin(token: str, sid: str, action: str, request: gr.Request = None) -> str:
        """Plain text (the API's answer); the page shows it as Markdown."""
        try:
            guard.check(token, client_key(request))
        except PermissionError as err:
            return f"❌ {err}"
        sid = (sid or "").strip()
        done = {
            "hide": lambda: store.set_hidden(sid, True),
            "unhide": lambda: store.set_hidden(sid, False),
            "delete": lambda: store.delete(sid),
            "re-run": lambda: store.requeue(sid),
        }.get(action)
        if done is None:
            return f"❌ unknown action {action!r}"
        return f"✅ {action} {sid}" if done() else f"❌ no submission {sid!r}"

    def admin_form(token: str, sid: str, action: str, request: gr.Request = None) -> str:
        return markdown_text(admin(token, sid, action, request))

    def benchmarks_for(track: str):
        names = model_benchmarks if track == "models" else metric_benchmarks
        return gr.Dropdown(choices=names, value=names[0] if names else None)

    def take_part(name: str | None, request: gr.Request = None):
        """The guide and the three downloads of one benchmark (files built on first use)."""
        try:
            bench = get_benchmark(name or "")
        except ValueError as err:
            none = gr.DownloadButton(value=None, interactive=False)
            return markdown_text(err), none, none, none
        text = guide(bench, board_url(request), settings)
        files = [
            inputs_file(bench, exports, "zip"),
            inputs_file(bench, exports, "parquet"),
            example_file(bench, exports),
        ]
        return (text, *[gr.DownloadButton(value=str(f), interactive=True) for f in files])

    def benchmarks_api() -> list:
        return [line_format(get_benchmark(n)) for n in available_benchmarks()]

    def inputs_api(name: str, fmt: str) -> str:
        return str(inputs_file(get_benchmark(str(name or "")), exports, str(fmt or "zip")))

    def example_api(name: str) -> str:
        return str(example_file(get_benchmark(str(name or "")), exports))

    # --------------------------------------------------------------------------------- layout
    limits = (
        f"Files: JSONL, UTF-8, at most {human_size(max_bytes)}; texts at most {MAX_TEXT_CHARS:,} characters. "
        f"Uploads: {int(settings['rate_limit'])} per {float(settings['rate_window_s']) / 60:g} minutes per address "
        "(or Hub user), refused ones included. The format of each benchmark is under *How to take part*."
    )
    all_benchmarks = [(f"{n} ({get_benchmark_track(n)})", n) for n in available_benchmarks()]
    with gr.Blocks(title="mmjudge leaderboard") as demo:
        gr.Markdown("# mmjudge leaderboard\n" + ABOUT)
        if settings.get("demo"):
            gr.Markdown(DEMO_NOTE, elem_classes=["lb-note"])
        with gr.Tabs():
            with gr.Tab("Models", id="models"):
                with gr.Row():
                    m_bench = gr.Dropdown(
                        model_benchmarks,
                        value=views.default_benchmark(store, "models") or (model_benchmarks or [None])[0],
                        label="Benchmark",
                        elem_id="models-bench",
                    )
                    m_task = gr.Dropdown([ALL, *MODEL_TASKS], value=ALL, label="Task")
                    m_rank = gr.Dropdown(["overall", *CRITERIA], value="overall", label="Rank by")
                    m_cols = gr.Radio(["criteria", "tasks"], value="criteria", label="Columns")
                    m_group = gr.Dropdown(
                        views.signature_choices(store, "models", m_bench.value), label="Signature group"
                    )
                with gr.Row():
                    m_refresh = gr.Button("Refresh", size="sm")
                    m_csv = gr.DownloadButton("Results (CSV)", size="sm", interactive=False, elem_id="models-csv")
                    m_json = gr.DownloadButton("Results (JSON)", size="sm", interactive=False, elem_id="models-json")
                m_table = gr.Dataframe(
                    label="Models",
                    interactive=False,
                    show_search="search",
                    pinned_columns=2,
                    max_height=420,
                    elem_id="models-table",
                )
                m_caption = gr.Markdown(latex_delimiters=[], elem_classes=["lb-note"], elem_id="models-caption")
                # One line per model across the criteria (Gradio's BarPlot stacks colours, which misreads as sums).
                m_plot = gr.LinePlot(
                    x="criterion",
                    y="score",
                    color="place",
                    title="Criterion profile of the top models",
                    y_lim=[1, 5],
                    height=300,
                    sort=list(CRITERIA),
                    color_map=views.PLACE_COLOURS,
                    tooltip=["place", "name", "criterion", "score"],
                )
            with gr.Tab("Metrics", id="metrics"):
                with gr.Row():
                    x_bench = gr.Dropdown(
                        metric_benchmarks,
                        value=views.default_benchmark(store, "metrics") or (metric_benchmarks or [None])[0],
                        label="Benchmark",
                        elem_id="metrics-bench",
                    )
                    x_task = gr.Dropdown([ALL, *MODEL_TASKS], value=ALL, label="Task")
                    x_crit = gr.Dropdown(["", "overall", *CRITERIA], value="", label="Criterion (blank = all)")
                    x_group = gr.Dropdown(
                        views.signature_choices(store, "metrics", x_bench.value),
                        label="Signature group",
                        elem_id="metrics-group",
                    )
                with gr.Row():
                    x_refresh = gr.Button("Refresh", size="sm")
                    x_csv = gr.DownloadButton("Results (CSV)", size="sm", interactive=False, elem_id="metrics-csv")
                    x_json = gr.DownloadButton("Results (JSON)", size="sm", interactive=False, elem_id="metrics-json")
                x_table = gr.Dataframe(
                    label="Metrics",
                    interactive=False,
                    show_search="search",
                    pinned_columns=3,
                    max_height=420,
                    elem_id="metrics-table",
                )
                x_caption = gr.Markdown(latex_delimiters=[], elem_classes=["lb-note"])
            with gr.Tab("How to take part", id="take-part"):
                t_bench = gr.Dropdown(
                    all_benchmarks,
                    value=all_benchmarks[0][1] if all_benchmarks else None,
                    label="Benchmark",
                    elem_id="take-part-bench",
                )
                with gr.Row():
                    t_zip = gr.DownloadButton("Inputs (zip: JSONL + images)", interactive=False, elem_id="inputs-zip")
                    t_parquet = gr.DownloadButton(
                        "Inputs (Parquet, image bytes inside)", interactive=False, elem_id="inputs-parquet"
                    )
                    t_example = gr.DownloadButton(
                        "Example submission (JSONL)", interactive=False, elem_id="example-submission"
                    )
                t_guide = gr.Markdown(latex_delimiters=[], elem_id="take-part-guide")
            with gr.Tab("Submit", id="submit"):
                with gr.Row():
                    s_track = gr.Radio(["models", "metrics"], value="models", label="Track")
                    s_bench = gr.Dropdown(
                        model_benchmarks,
                        value=model_benchmarks[0] if model_benchmarks else None,
                        label="Benchmark",
                        allow_custom_value=True,
                    )  # checked by intake; API clients may skip the track switch
                with gr.Row():
                    s_name = gr.Textbox(label="Model / metric name", max_lines=1, elem_id="submit-name")
                    s_who = gr.Textbox(
                        label='Submitter (optional: your name; blank = your Hub user or "anonymous")',
                        max_lines=1,
                        elem_id="submit-who",
                    )
                    s_link = gr.Textbox(label="Link (https://…)", max_lines=1, elem_id="submit-link")
                s_desc = gr.Textbox(label="Description", lines=2)
                s_file = gr.File(label="JSONL file", file_types=[".jsonl", ".json", ".txt"], elem_id="submit-file")
                gr.Markdown(limits, elem_classes=["lb-note"])
                s_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
                s_result = gr.Markdown(latex_delimiters=[], elem_id="submit-result")
            with gr.Tab("Queue", id="queue"):
                q_refresh = gr.Button("Refresh", size="sm")
                q_table = gr.Dataframe(label="Queue (oldest first)", interactive=False, elem_id="queue-table")
            with gr.Tab("Submission", id="submission"):
                p_id = gr.Textbox(label="Submission id", max_lines=1)
                p_button = gr.Button("Show")
                p_page = gr.Markdown(latex_delimiters=[])
                p_table = gr.Dataframe(label="Breakdown", interactive=False)
            with gr.Tab("Admin", id="admin"):
                a_token = gr.Textbox(label="Admin token", type="password", max_lines=1)
                a_id = gr.Textbox(label="Submission id", max_lines=1)
                a_action = gr.Radio(["hide", "unhide", "delete", "re-run"], value="re-run", label="Action")
                gr.Markdown(
                    "Wrong tokens are throttled per address: after each one in a row the wait doubles "
                    f"(from {float(settings['admin_delay_s']):g} s).",
                    elem_classes=["lb-note"],
                )
                a_button = gr.Button("Apply")
                a_result = gr.Markdown(latex_delimiters=[])

        # ------------------------------------------------------------------------------ events
        m_inputs = [m_bench, m_task, m_rank, m_cols, m_group]
        m_outputs = [m_table, m_caption, m_plot, m_csv, m_json]
        for trigger in (m_refresh.click, m_task.change, m_rank.change, m_cols.change, m_group.change):
            trigger(models_table, m_inputs, m_outputs, api_name=False)
        x_inputs = [x_bench, x_task, x_crit, x_group]
        x_outputs = [x_table, x_caption, x_csv, x_json]
        for trigger in (x_refresh.click, x_bench.change, x_task.change, x_crit.change, x_group.change):
            trigger(metrics_table, x_inputs, x_outputs, api_name=False)
        m_refresh.click(lambda b: groups("models", b), m_bench, m_group, api_name=False)
        m_bench.change(lambda b: groups("models", b), m_bench, m_group, api_name=False).then(
            models_table, m_inputs, m_outputs, api_name=False
        )
        x_refresh.click(lambda b: groups("metrics", b), x_bench, x_group, api_name=False)
        x_bench.change(lambda b: groups("metrics", b), x_bench, x_group, api_name=False)  # groups are per benchmark
        t_bench.change(take_part, t_bench, [t_guide, t_zip, t_parquet, t_example], api_name=False, concurrency_limit=2)
        s_track.change(benchmarks_for, s_track, s_bench, api_name=False)
        s_fields = [s_track, s_bench, s_name, s_who, s_link, s_desc, s_file]
        s_button.click(submit_form, s_fields, s_result, api_name=False, concurrency_limit=8, concurrency_id="submit")
        q_refresh.click(lambda: views.queue_view(store), None, q_table, api_name="queue")
        p_button.click(
            lambda sid: views.submission_view(store, sid, settings), p_id, [p_page, p_table], api_name="submission"
        )
        a_button.click(admin_form, [a_token, a_id, a_action], a_result, api_name=False)
        # API-only endpoints (hidden components keep the HTTP API simple for clients and tests); their
        # replies are plain text, JSON or files, never Markdown, so they carry no escapes.
        api_text = gr.Textbox(visible=False)
        api_out = gr.JSON(visible=False)
        api_file = gr.File(visible=False)
        api_a = gr.Textbox(visible=False)
        api_b = gr.Textbox(visible=False)
        api_c = gr.Textbox(visible=False)
        api_d = gr.Textbox(visible=False)
        gr.Button(visible=False).click(
            submit_api, s_fields, api_text, api_name="submit", concurrency_limit=8, concurrency_id="submit"
        )
        gr.Button(visible=False).click(admin, [a_token, a_id, a_action], api_text, api_name="admin")
        gr.Button(visible=False).click(benchmarks_api, None, api_out, api_name="benchmarks")
        gr.Button(visible=False).click(
            inputs_api, [api_a, api_b], api_file, api_name="benchmark_inputs", concurrency_limit=2
        )
        gr.Button(visible=False).click(example_api, api_a, api_file, api_name="example_submission")
        gr.Button(visible=False).click(
            lambda sid: views.standing(store, sid, settings), api_a, api_out, api_name="status"
        )
        gr.Button(visible=False).click(
            lambda t, b, k, r: views.results_records(store, t or "models", b or None, k or ALL, r or "", 0, settings),
            [api_a, api_b, api_c, api_d],
            api_out,
            api_name="results",
        )
        gr.Button(visible=False).click(
            lambda t, r: views.models_view(store, t or ALL, r or "overall", settings=settings)[0].to_dict(
                orient="records"
            ),
            [api_a, api_b],
            api_out,
            api_name="models_table",
        )
        gr.Button(visible=False).click(
            lambda b, t: views.metrics_view(store, b or None, t or ALL)[0].to_dict(orient="records"),
            [api_a, api_b],
            api_out,
            api_name="metrics_table",
        )
        demo.load(lambda b: groups("models", b), m_bench, m_group, api_name=False)
        demo.load(lambda b: groups("metrics", b), x_bench, x_group, api_name=False)
        demo.load(models_table, m_inputs, m_outputs, api_name=False)
        demo.load(metrics_table, x_inputs, x_outputs, api_name=False)
        demo.load(take_part, t_bench, [t_guide, t_zip, t_parquet, t_example], api_name=False)
        demo.load(lambda: views.queue_view(store), None, q_table, api_name=False)
    demo.queue(default_concurrency_limit=4, max_size=512)
    demo.lb_store = store  # for the CLI and tests
    demo.lb_max_bytes = max_bytes
    demo.lb_exports = exports
    return demo


def get_benchmark_track(name: str) -> str:
    """The track a registered benchmark belongs to (without building it)."""
    return "models" if name in available_benchmarks("models") else "metrics"


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


def launch(demo: Any, host: str = "127.0.0.1", port: int | None = None, **kwargs: Any):
    """Launch with the board's theme/CSS (Gradio 6 takes them at launch), the web server's upload cap
    (above the board's limit: :func:`~mmjudge.leaderboard.intake.upload_cap`) and the exports folder
    (the downloads) as the one folder outside the temp dir it may serve files from."""
    cap = upload_cap(demo.lb_max_bytes) if hasattr(demo, "lb_max_bytes") else None
    allowed = list(kwargs.pop("allowed_paths", None) or [])
    if hasattr(demo, "lb_exports"):
        Path(demo.lb_exports).mkdir(parents=True, exist_ok=True)
        allowed.append(os.fspath(demo.lb_exports))
    return demo.launch(server_name=host, server_port=port, css=CSS, max_file_size=cap, allowed_paths=allowed, **kwargs)
