"""The leaderboard's Gradio 6 app: rankings per track, a submission form, the queue, a page per
submission, an admin panel. Layout only — the data comes from :mod:`mmjudge.leaderboard.views`,
submissions go through :func:`mmjudge.leaderboard.intake.submit_path`, scoring is the worker's.

HTTP API (``gradio_client``): ``/submit``, ``/models_table``, ``/metrics_table``, ``/queue``,
``/submission``, ``/admin``. API replies are plain text (never HTML-escaped); the page shows the same
messages as Markdown through :func:`~mmjudge.leaderboard.protection.markdown_text`.

No ``from __future__ import annotations`` here: Gradio injects a ``gr.Request`` only into parameters
whose annotation *is* ``gr.Request``, and with postponed annotations the hint would stay the string
"gr.Request", which Gradio cannot resolve (gradio is imported inside :func:`build_app`). Without the
request, the rate limit would key on whatever the client typed (issue 21).
"""

import functools
from typing import Any, Optional

from mmjudge.leaderboard.benchmarks import CRITERIA, MODEL_TASKS, available_benchmarks, configure
from mmjudge.leaderboard.intake import submit_path, upload_cap
from mmjudge.leaderboard.protection import AdminGuard, RateLimit, markdown_text
from mmjudge.leaderboard.ranking import ALL
from mmjudge.leaderboard.settings import load_settings
from mmjudge.leaderboard.store import Store
from mmjudge.leaderboard import views

ABOUT = """Two tracks. **Models**: upload your model's outputs for a benchmark's inputs as JSONL lines
`{"id": …, "text": …}`; they are scored with HarmonicEval and ranked overall, per task and per criterion.
**Metrics**: upload your metric's per-item scores as `{"id": …, "score": …}` (optionally one column per
criterion) for a human-judgment benchmark; the meta-evaluation ranks metrics by agreement with humans
(Kendall τ, best-of-N accuracy, bootstrap intervals). Rows are ranked together only under comparable
signatures (same judge, prompts, γ / same protocol)."""
DEMO_NOTE = ("**Demo mode**: the judge is the hash-based `dummy` stand-in and the demo judgments are synthetic — "
             "the plumbing is real, the numbers mean nothing.")  # fmt: skip
CSS = ".lb-note {font-size: 0.9em; opacity: 0.85}"


def build_app(data_dir: str, settings: Optional[dict] = None):
    """The Blocks app over the data dir (settings from ``<data_dir>/settings.json`` unless given)."""
    import gradio as gr

    settings = settings if settings is not None else load_settings(data_dir)
    if settings.get("benchmarks"):
        configure(settings["benchmarks"])
    store = Store(data_dir)
    rate = RateLimit(int(settings["rate_limit"]), float(settings["rate_window_s"]))
    max_bytes = int(settings["max_upload_bytes"])
    model_benchmarks = available_benchmarks("models")
    metric_benchmarks = available_benchmarks("metrics")

    models_table = functools.partial(views.models_view, store)  # (task, rank_by, columns, group index)
    metrics_table = functools.partial(views.metrics_view, store)  # (benchmark, task, criterion, group index)

    def groups(track: str, benchmark: Optional[str] = None):
        choices = views.signature_choices(store, track, benchmark or None)
        return gr.Dropdown(choices=choices, value=choices[0][1] if choices else None)

    guard = AdminGuard(float(settings["admin_delay_s"]), float(settings["admin_max_delay_s"]))

    def receive(track, benchmark, name, submitter, link, description, upload, request) -> str:
        """The plain-text reply to one upload (the API's answer; the form shows it as Markdown)."""
        client = client_key(request)
        if not str(submitter or "").strip():
            submitter = client[len("user:"):] if client.startswith("user:") else "anonymous"  # never the address
        path = upload if isinstance(upload, str) or upload is None else getattr(upload, "name", None)
        receipt = submit_path(store, path, max_bytes=max_bytes, track=track, benchmark=benchmark, name=name,
                              submitter=submitter, link=link, description=description, rate_limit=rate,
                              client=client)  # fmt: skip
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
        done = {"hide": lambda: store.set_hidden(sid, True), "unhide": lambda: store.set_hidden(sid, False),
                "delete": lambda: store.delete(sid), "re-run": lambda: store.requeue(sid)}.get(action)  # fmt: skip
        if done is None:
            return f"❌ unknown action {action!r}"
        return f"✅ {action} {sid}" if done() else f"❌ no submission {sid!r}"

    def admin_form(token: str, sid: str, action: str, request: gr.Request = None) -> str:
        return markdown_text(admin(token, sid, action, request))

    def benchmarks_for(track: str):
        names = model_benchmarks if track == "models" else metric_benchmarks
        return gr.Dropdown(choices=names, value=names[0] if names else None)

    with gr.Blocks(title="mmjudge leaderboard") as demo:
        gr.Markdown("# mmjudge leaderboard\n" + ABOUT)
        if settings.get("demo"):
            gr.Markdown(DEMO_NOTE, elem_classes=["lb-note"])
        with gr.Tabs():
            with gr.Tab("Models", id="models"):
                with gr.Row():
                    m_task = gr.Dropdown([ALL, *MODEL_TASKS], value=ALL, label="Task")
                    m_rank = gr.Dropdown(["overall", *CRITERIA], value="overall", label="Rank by")
                    m_cols = gr.Radio(["criteria", "tasks"], value="criteria", label="Columns")
                    m_group = gr.Dropdown(views.signature_choices(store, "models"), label="Signature group")
                m_refresh = gr.Button("Refresh", size="sm")
                m_table = gr.Dataframe(label="Models", interactive=False, show_search="search", pinned_columns=2,
                                       max_height=420, elem_id="models-table")  # fmt: skip
                m_caption = gr.Markdown(latex_delimiters=[], elem_classes=["lb-note"])
                # One line per model across the criteria (Gradio's BarPlot stacks colours, which misreads as sums).
                m_plot = gr.LinePlot(x="criterion", y="score", color="place", title="Criterion profile of the top models",
                                     y_lim=[1, 5], height=300, sort=list(CRITERIA), color_map=views.PLACE_COLOURS,
                                     tooltip=["place", "name", "criterion", "score"])  # fmt: skip
            with gr.Tab("Metrics", id="metrics"):
                with gr.Row():
                    x_bench = gr.Dropdown(metric_benchmarks, value=metric_benchmarks[0] if metric_benchmarks else None, label="Benchmark",
                                          elem_id="metrics-bench")  # fmt: skip
                    x_task = gr.Dropdown([ALL, *MODEL_TASKS], value=ALL, label="Task")
                    x_crit = gr.Dropdown(["", "overall", *CRITERIA], value="", label="Criterion (blank = all)")
                    x_group = gr.Dropdown(views.signature_choices(store, "metrics", x_bench.value), label="Signature group",
                                          elem_id="metrics-group")  # fmt: skip
                x_refresh = gr.Button("Refresh", size="sm")
                x_table = gr.Dataframe(label="Metrics", interactive=False, show_search="search", pinned_columns=3,
                                       max_height=420, elem_id="metrics-table")  # fmt: skip
                x_caption = gr.Markdown(latex_delimiters=[], elem_classes=["lb-note"])
            with gr.Tab("Submit", id="submit"):
                with gr.Row():
                    s_track = gr.Radio(["models", "metrics"], value="models", label="Track")
                    s_bench = gr.Dropdown(model_benchmarks, value=model_benchmarks[0] if model_benchmarks else None, label="Benchmark",
                                          allow_custom_value=True)  # checked by intake; API clients may skip the track switch
                with gr.Row():
                    s_name = gr.Textbox(label="Model / metric name", max_lines=1, elem_id="submit-name")
                    s_who = gr.Textbox(label="Submitter (name or Hub user)", max_lines=1, elem_id="submit-who")
                    s_link = gr.Textbox(label="Link (https://…)", max_lines=1)
                s_desc = gr.Textbox(label="Description", lines=2)
                s_file = gr.File(label="JSONL file", file_types=[".jsonl", ".json", ".txt"], elem_id="submit-file")
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
                a_button = gr.Button("Apply")
                a_result = gr.Markdown(latex_delimiters=[])

        m_inputs = [m_task, m_rank, m_cols, m_group]
        m_outputs = [m_table, m_caption, m_plot]
        for trigger in (m_refresh.click, m_task.change, m_rank.change, m_cols.change, m_group.change):
            trigger(models_table, m_inputs, m_outputs, api_name=False)
        x_inputs = [x_bench, x_task, x_crit, x_group]
        for trigger in (x_refresh.click, x_bench.change, x_task.change, x_crit.change, x_group.change):
            trigger(metrics_table, x_inputs, [x_table, x_caption], api_name=False)
        m_refresh.click(lambda: groups("models"), None, m_group, api_name=False)
        x_refresh.click(lambda b: groups("metrics", b), x_bench, x_group, api_name=False)
        x_bench.change(lambda b: groups("metrics", b), x_bench, x_group, api_name=False)  # groups are per benchmark
        s_track.change(benchmarks_for, s_track, s_bench, api_name=False)
        s_fields = [s_track, s_bench, s_name, s_who, s_link, s_desc, s_file]
        s_button.click(submit_form, s_fields, s_result, api_name=False, concurrency_limit=8, concurrency_id="submit")
        q_refresh.click(lambda: views.queue_view(store), None, q_table, api_name="queue")
        p_button.click(lambda sid: views.submission_view(store, sid), p_id, [p_page, p_table], api_name="submission")
        a_button.click(admin_form, [a_token, a_id, a_action], a_result, api_name=False)
        # API-only endpoints (hidden components keep the HTTP API simple for clients and tests); their
        # replies are plain text or JSON, never Markdown, so they carry no escapes.
        api_text = gr.Textbox(visible=False)
        gr.Button(visible=False).click(submit_api, s_fields, api_text, api_name="submit", concurrency_limit=8,
                                       concurrency_id="submit")  # fmt: skip
        gr.Button(visible=False).click(admin, [a_token, a_id, a_action], api_text, api_name="admin")
        api_task = gr.Textbox(visible=False)
        api_rank = gr.Textbox(visible=False)
        api_out = gr.JSON(visible=False)
        gr.Button(visible=False).click(
            lambda t, r: views.models_view(store, t or ALL, r or "overall")[0].to_dict(orient="records"),
            [api_task, api_rank], api_out, api_name="models_table")  # fmt: skip
        gr.Button(visible=False).click(
            lambda b, t: views.metrics_view(store, b or None, t or ALL)[0].to_dict(orient="records"),
            [api_task, api_rank], api_out, api_name="metrics_table")  # fmt: skip
        demo.load(lambda: groups("models"), None, m_group, api_name=False)
        demo.load(lambda b: groups("metrics", b), x_bench, x_group, api_name=False)
        demo.load(models_table, m_inputs, m_outputs, api_name=False)
        demo.load(metrics_table, x_inputs, [x_table, x_caption], api_name=False)
        demo.load(lambda: views.queue_view(store), None, q_table, api_name=False)
    demo.queue(default_concurrency_limit=4, max_size=512)
    demo.lb_store = store  # for the CLI and tests
    demo.lb_max_bytes = max_bytes
    return demo


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


def launch(demo: Any, host: str = "127.0.0.1", port: Optional[int] = None, **kwargs: Any):
    """Launch with the board's theme/CSS (Gradio 6 takes them at launch) and the web server's upload cap
    (above the board's limit: :func:`~mmjudge.leaderboard.intake.upload_cap`)."""
    cap = upload_cap(demo.lb_max_bytes) if hasattr(demo, "lb_max_bytes") else None
    return demo.launch(server_name=host, server_port=port, css=CSS, max_file_size=cap, **kwargs)
