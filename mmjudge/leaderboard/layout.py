"""The board's page (Gradio 6 Blocks): one tab per track, built from the track's declaration, then *How
to take part*, *Submit*, *Queue*, *Submission* and *Admin*, and the API-only endpoints. Layout and
wiring only: every event is a :class:`~mmjudge.leaderboard.handlers.Board` method.

A new track needs nothing here: :func:`track_tab` builds its controls (``Track.filters``), table and
plot (``Track.plot``), and :func:`wire_track` its events, from the declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

import gradio as gr

from mmjudge.leaderboard import views
from mmjudge.leaderboard.benchmarks import available_benchmarks
from mmjudge.leaderboard.export import rate_limit_text, size_limit_text
from mmjudge.leaderboard.handlers import Board
from mmjudge.leaderboard.tracks import Track, all_tracks
from mmjudge.leaderboard.validation import MAX_TEXT_CHARS

SIGNATURES_NOTE = (
    "Every row shows its 95% bootstrap interval; rows are ranked together only under comparable signatures "
    "(same judge, prompts, γ / same protocol)."
)
DEMO_NOTE = (
    "**Demo mode**: the judge is the hash-based `dummy` stand-in and the demo judgments are synthetic — "
    "the plumbing is real, the numbers mean nothing."
)
# Tables wrap their cells and share the width, so identifying columns (note, submitter, id) are seen
# without scrolling sideways.
CSS = (
    ".lb-note {font-size: 0.9em; opacity: 0.85} "
    ".lb-table td, .lb-table th {font-size: 0.85em; overflow-wrap: anywhere; word-break: break-word}"
)
REFRESH_S = 5.0  # how often an open page asks whether the tables changed (one cheap query)
FOLLOW_S = 2.0  # how often the Submit tab's reply re-reads the submission it follows


@dataclass
class TrackTab:
    """The components of one track's tab."""

    track: Track
    bench: Any
    filters: list
    group: Any
    refresh: Any
    table: Any
    caption: Any
    downloads: list
    plot: Any = None

    @property
    def inputs(self) -> list:
        return [self.bench, self.group, *self.filters]

    @property
    def outputs(self) -> list:
        return [self.table, self.caption, *([self.plot] if self.plot is not None else []), *self.downloads]


@dataclass
class Page:
    """The components that events connect across tabs."""

    tabs: Any = None
    tracks: list[TrackTab] = field(default_factory=list)
    take_part: dict = field(default_factory=dict)
    submit: dict = field(default_factory=dict)
    queue: dict = field(default_factory=dict)
    submission: dict = field(default_factory=dict)
    admin: dict = field(default_factory=dict)


def about() -> str:
    """The page's introduction: one paragraph per track, from its declaration (``Track.about``)."""
    tracks = all_tracks()
    parts = [f"**{t.label}**: {t.about}" for t in tracks if t.about]
    return f"{len(tracks)} tracks. " + " ".join(parts) + " " + SIGNATURES_NOTE


def _control(f) -> Any:
    if f.kind == "radio":
        return gr.Radio(list(f.choices), value=f.value, label=f.label)
    return gr.Dropdown(list(f.choices), value=f.value, label=f.label)


def track_tab(board: Board, track: Track) -> TrackTab:
    """A track's tab, from its declaration: benchmark, filters, signature group; downloads; table; plot."""
    name = track.name
    with gr.Tab(track.label, id=name):
        with gr.Row():
            bench = gr.Dropdown(
                available_benchmarks(name),
                value=board.first_benchmark(name),
                label="Benchmark",
                elem_id=f"{name}-bench",
            )
            filters = [_control(f) for f in track.filters]
            group = gr.Dropdown(
                views.signature_choices(board.store, name, bench.value),
                label="Signature group",
                elem_id=f"{name}-group",
            )
        with gr.Row():
            refresh = gr.Button("Refresh", size="sm")
            csv = gr.DownloadButton("Results (CSV)", size="sm", interactive=False, elem_id=f"{name}-csv")
            json = gr.DownloadButton("Results (JSON)", size="sm", interactive=False, elem_id=f"{name}-json")
        table = gr.Dataframe(
            label=track.label,
            interactive=False,
            show_search="search",
            pinned_columns=track.pinned_columns,
            max_height=420,
            wrap=True,
            elem_id=f"{name}-table",
            elem_classes=["lb-table"],
        )
        caption = gr.Markdown(latex_delimiters=[], elem_classes=["lb-note"], elem_id=f"{name}-caption")
        plot = None
        if track.plot is not None:
            p = track.plot
            # One line per row across the criteria (Gradio's BarPlot stacks colours, which misreads as sums).
            plot = gr.LinePlot(
                x=p.x,
                y=p.y,
                color=p.color,
                title=p.title,
                y_lim=list(p.y_lim),
                height=300,
                sort=list(p.sort),
                color_map=p.colour_map(),
                tooltip=list(p.tooltip),
                elem_id=f"{name}-plot",
            )
    return TrackTab(track, bench, filters, group, refresh, table, caption, [csv, json], plot)


def take_part_tab(page: Page) -> None:
    all_benchmarks = [(f"{n} ({_track_of(n)})", n) for n in available_benchmarks()]
    with gr.Tab("How to take part", id="take-part"):
        bench = gr.Dropdown(
            all_benchmarks,
            value=all_benchmarks[0][1] if all_benchmarks else None,
            label="Benchmark",
            elem_id="take-part-bench",
        )
        with gr.Row():
            zipped = gr.DownloadButton("Inputs (zip: JSONL + images)", interactive=False, elem_id="inputs-zip")
            parquet = gr.DownloadButton(
                "Inputs (Parquet, image bytes inside)", interactive=False, elem_id="inputs-parquet"
            )
            example = gr.DownloadButton("Example submission (JSONL)", interactive=False, elem_id="example-submission")
        text = gr.Markdown(latex_delimiters=[], elem_id="take-part-guide")
    page.take_part = {"bench": bench, "outputs": [text, zipped, parquet, example]}


def _track_of(name: str) -> str:
    return next(t.name for t in all_tracks() if name in available_benchmarks(t.name))


def submit_tab(board: Board, page: Page) -> None:
    s = board.settings
    first = all_tracks()[0].name
    limits = (
        f"Files: JSONL, UTF-8, at most {size_limit_text(s)}; texts at most {MAX_TEXT_CHARS:,} characters. "
        f"Uploads: {rate_limit_text(s)}. The format of each benchmark is under *How to take part*."
    )
    with gr.Tab("Submit", id="submit"):
        with gr.Row():
            track = gr.Radio([t.name for t in all_tracks()], value=first, label="Track")
            names = available_benchmarks(first)
            bench = gr.Dropdown(
                names, value=names[0] if names else None, label="Benchmark", allow_custom_value=True
            )  # checked by intake; API clients may skip the track switch
        with gr.Row():
            name = gr.Textbox(label="Model / metric / judge name", max_lines=1, elem_id="submit-name")
            who = gr.Textbox(
                label='Submitter (optional: your name; blank = your Hub user or "anonymous")',
                max_lines=1,
                elem_id="submit-who",
            )
            link = gr.Textbox(label="Link (https://…)", max_lines=1, elem_id="submit-link")
        description = gr.Textbox(label="Description", lines=2)
        upload = gr.File(
            label=f"JSONL file (at most {size_limit_text(s)})",
            file_types=[".jsonl", ".json", ".txt"],
            elem_id="submit-file",
        )
        gr.Markdown(limits, elem_classes=["lb-note"], elem_id="submit-limits")
        button = gr.Button("Submit", variant="primary", elem_id="submit-button")
        result = gr.Markdown(latex_delimiters=[], elem_id="submit-result")
        followed = gr.State("")
        follow = gr.Timer(FOLLOW_S, active=False)
    page.submit = {
        "fields": [track, bench, name, who, link, description, upload],
        "track": track,
        "bench": bench,
        "button": button,
        "result": result,
        "followed": followed,
        "timer": follow,
    }


def queue_submission_admin_tabs(board: Board, page: Page) -> None:
    with gr.Tab("Queue", id="queue"):
        refresh = gr.Button("Refresh", size="sm")
        table = gr.Dataframe(label="Queue (oldest first)", interactive=False, elem_id="queue-table")
    page.queue = {"refresh": refresh, "table": table}
    with gr.Tab("Submission", id="submission"):
        sid = gr.Textbox(label="Submission id", max_lines=1, elem_id="submission-id")
        show = gr.Button("Show")
        text = gr.Markdown(latex_delimiters=[], elem_id="submission-page")
        breakdown = gr.Dataframe(label="Breakdown", interactive=False)
    page.submission = {"id": sid, "button": show, "outputs": [text, breakdown]}
    with gr.Tab("Admin", id="admin"):
        token = gr.Textbox(label="Admin token", type="password", max_lines=1)
        target = gr.Textbox(label="Submission id", max_lines=1)
        action = gr.Radio(["hide", "unhide", "delete", "re-run"], value="re-run", label="Action")
        gr.Markdown(
            "Wrong tokens are throttled per address: after each one in a row the wait doubles "
            f"(from {float(board.settings['admin_delay_s']):g} s); the right token is never refused.",
            elem_classes=["lb-note"],
        )
        apply = gr.Button("Apply")
        reply = gr.Markdown(latex_delimiters=[])
    page.admin = {"inputs": [token, target, action], "button": apply, "result": reply}


def wire_track(board: Board, tab: TrackTab) -> None:
    """A track tab's events: any filter (or Refresh) rebuilds the table; a benchmark picks its groups first."""
    table = partial(board.table, tab.track.name)
    groups = partial(board.groups, tab.track.name)
    for trigger in (tab.refresh.click, tab.group.change, *(f.change for f in tab.filters)):
        trigger(table, tab.inputs, tab.outputs, api_name=False)
    tab.refresh.click(groups, [tab.bench, tab.group], tab.group, api_name=False)
    tab.bench.change(groups, tab.bench, tab.group, api_name=False).then(table, tab.inputs, tab.outputs, api_name=False)


def wire(board: Board, page: Page, demo: Any) -> None:
    """Every event of the page, and the loads that fill it."""
    for tab in page.tracks:
        wire_track(board, tab)
    tp = page.take_part
    tp["bench"].change(board.take_part, tp["bench"], tp["outputs"], api_name=False, concurrency_limit=2)
    sub = page.submit
    sub["track"].change(board.benchmarks_for, sub["track"], sub["bench"], api_name=False)
    sub["button"].click(
        board.submit_form, sub["fields"], sub["result"], api_name=False, concurrency_limit=8, concurrency_id="submit"
    ).then(board.follow_start, sub["result"], [sub["followed"], sub["timer"]], api_name=False)
    sub["timer"].tick(board.follow, [sub["followed"], sub["result"]], [sub["result"], sub["timer"]], api_name=False)
    page.queue["refresh"].click(board.queue, None, page.queue["table"], api_name="queue")
    sm = page.submission
    sm["button"].click(board.submission, sm["id"], sm["outputs"], api_name="submission")
    ad = page.admin
    ad["button"].click(board.admin_form, ad["inputs"], ad["result"], api_name=False)
    # The tables follow the store without a click: the timer asks for its version and rebuilds on change.
    seen = gr.State(None)
    state = [c for tab in page.tracks for c in tab.inputs]
    changing = [c for tab in page.tracks for c in (tab.group, *tab.outputs)] + [page.queue["table"]]
    gr.Timer(REFRESH_S).tick(board.refresh, [seen, *state], [seen, *changing], api_name=False, show_progress="hidden")
    demo.load(board.version, None, seen, api_name=False)  # the loads below build the tables of this version
    for tab in page.tracks:
        demo.load(partial(board.groups, tab.track.name), tab.bench, tab.group, api_name=False)
        demo.load(partial(board.table, tab.track.name), tab.inputs, tab.outputs, api_name=False)
    demo.load(board.take_part, tp["bench"], tp["outputs"], api_name=False)
    demo.load(board.queue, None, page.queue["table"], api_name=False)
    demo.load(board.open_page, None, [page.tabs, sm["id"], *sm["outputs"]], api_name=False)


def api_endpoints(board: Board, page: Page) -> None:
    """API-only endpoints (hidden components keep the HTTP API simple for clients and tests); their
    replies are plain text, JSON or files, never Markdown, so they carry no escapes."""
    text, out, file = gr.Textbox(visible=False), gr.JSON(visible=False), gr.File(visible=False)
    a, b, c, d = (gr.Textbox(visible=False) for _ in range(4))
    sub = page.submit
    gr.Button(visible=False).click(
        board.submit_api, sub["fields"], text, api_name="submit", concurrency_limit=8, concurrency_id="submit"
    )
    gr.Button(visible=False).click(board.admin, page.admin["inputs"], text, api_name="admin")
    gr.Button(visible=False).click(board.benchmarks_api, None, out, api_name="benchmarks")
    gr.Button(visible=False).click(board.inputs_api, [a, b], file, api_name="benchmark_inputs", concurrency_limit=2)
    gr.Button(visible=False).click(board.example_api, a, file, api_name="example_submission")
    gr.Button(visible=False).click(board.status_api, a, out, api_name="status")
    gr.Button(visible=False).click(board.results_api, [a, b, c, d], out, api_name="results")
    for tab in page.tracks:
        inputs = [a, b, c, d][: len(tab.track.table_api)]
        gr.Button(visible=False).click(
            partial(board.table_api, tab.track.name), inputs, out, api_name=f"{tab.track.name}_table"
        )


def build_page(board: Board) -> Any:
    """The Blocks of one board (queued: at most 4 events at once by default, 512 waiting)."""
    page = Page()
    with gr.Blocks(title="mmjudge leaderboard") as demo:
        gr.Markdown("# mmjudge leaderboard\n" + about())
        if board.settings.get("demo"):
            gr.Markdown(DEMO_NOTE, elem_classes=["lb-note"])
        with gr.Tabs() as page.tabs:
            page.tracks = [track_tab(board, track) for track in all_tracks()]
            take_part_tab(page)
            submit_tab(board, page)
            queue_submission_admin_tabs(board, page)
        wire(board, page, demo)
        api_endpoints(board, page)
    demo.queue(default_concurrency_limit=4, max_size=512)
    return demo
