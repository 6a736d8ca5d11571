"""The Models track: a team uploads its model's outputs ``{"id", "text"}`` for a benchmark's inputs; the
worker scores them with HarmonicEval (the engine's judge and cache) and the board ranks them overall,
per task and per criterion, each row with its bootstrap interval and whether it is separable from the
row above.

>>> from mmjudge.leaderboard.benchmarks import get_benchmark
>>> track, bench = ModelsTrack(), get_benchmark("demo-inputs")
>>> track.example_line(bench, bench.public_items()[6])
{'id': 'demo-reg-1', 'text': "<your model's referring expression for this image>"}
>>> sorted(track.line_fields(bench))
['id', 'text']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmjudge.leaderboard.benchmarks import CRITERIA, MODEL_TASKS, PROMPTS, Benchmark
from mmjudge.leaderboard.display import INTERVAL_NOTE, failures_text, frame, interval_text, rounded, separable_text
from mmjudge.leaderboard.protection import safe_code
from mmjudge.leaderboard.ranking import ALL, public_rows, rank_models, summarise_models
from mmjudge.leaderboard.tracks import Filter, GuideWords, Plot, Scored, ScoringJob, Track, TrackView, ViewContext
from mmjudge.leaderboard.validation import MAX_TEXT_CHARS, validate_outputs
from mmjudge.report import json_safe, markdown_text

TOP_PLOTTED = 5
# The plot colours lines by place, not by name (a fixed domain: a newly ranked name would otherwise get
# no colour once Gradio has fixed the plot's colour domain); only the places that exist are drawn.
PLACES = [f"#{k}" for k in range(1, TOP_PLOTTED + 1)]
PLACE_COLOURS = dict(zip(PLACES, ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]))
PLOT_COLUMNS = ["place", "name", "criterion", "score"]
HARMONIC_EVAL = "harmonic_eval"  # the worker's resource: the loaded metric (tests may put a scripted one there)
_ASKS = {"question": "to the item's `question`", "box": "for the object in `box` (x, y, width, height in pixels)"}


def harmonic_eval(job: ScoringJob) -> Any:
    """HarmonicEval with the board's judge, through the shared judge cache, built once per worker (kept in
    ``job.resources[HARMONIC_EVAL]``; explanations are asked per call, so the same instance and judge give
    them; the Arena track uses its ``pairwise()``)."""
    if HARMONIC_EVAL not in job.resources:
        import mmjudge

        s = job.settings
        options = dict(s.get("judge_options") or {})
        if s.get("model"):
            options["model"] = s["model"]
        cache = str(job.data_dir / "judge_cache.sqlite")
        job.resources[HARMONIC_EVAL] = mmjudge.load(
            "harmonic_eval", judge=s["judge"], gamma=s["gamma"], cache=cache, **options
        )
    return job.resources[HARMONIC_EVAL]


def text_example_line(item: dict) -> dict:
    """One line of an outputs file (Models, Arena): the item's id and a placeholder naming what to write."""
    info = PROMPTS.task_info.get(item.get("task"))
    return {"id": item["id"], "text": f"<your model's {info.text_name if info else 'text'} for this image>"}


def text_line_fields() -> dict[str, str]:
    return {
        "id": "an id of the inputs, each exactly once",
        "text": f"your model's output (at most {MAX_TEXT_CHARS:,} characters)",
    }


def output_steps(bench: Benchmark, words: GuideWords, track: str) -> list[str]:
    """The guide's steps for an outputs file (Models, Arena): get the inputs, run the model on every item
    (what each task asks), write the lines, submit on ``track``."""
    per_task = {t: sum(1 for it in bench.public_items() if it.get("task") == t) for t in bench.tasks}
    lines = [
        "1. **Get the inputs**: *Inputs (zip)* — `inputs.jsonl` (one item per line: `id`, `task`, `image`, "
        "`question`, `box`) and `images/` — or *Inputs (Parquet)*, the same with the image bytes inside "
        '(`datasets.load_dataset("parquet", data_files=…)`).',
        f"2. **Run your model on every item** ({len(bench.ids)} items). What each task asks:",
    ]
    for t in bench.tasks:
        info = PROMPTS.task_info.get(t)
        if info is not None:
            target = " and ".join(_ASKS[n] for n in info.needs) or "of the image"
            lines.append(
                f"   - `{t}` — {info.label} ({per_task.get(t, 0)} items): write the {info.text_name} {target}."
            )
    return lines + [
        "3. **Write one JSON object per line** (UTF-8), every id exactly once, nothing else needed:",
        "",
        "   ```json",
        f"   {words.example}",
        "   ```",
        "",
        f"   *Example submission* has a line for every id. Texts: at most {MAX_TEXT_CHARS:,} characters each.",
        f"4. **Submit** the file (at most {words.size}) on the *Submit* tab (track *{track}*, benchmark "
        f"*{words.name}*), or from a terminal, which also waits for the score:",
        "",
        "   ```",
        f"   {words.command('download', 'inputs.zip')}",
        f"   {words.command('submit', 'outputs.jsonl')} --name my-vlm",
        "   ```",
        "",
    ]


class ModelsTrack(Track):
    name = "models"
    label = "Models"
    about = (
        "run your model on a benchmark's inputs (download them under *How to take part*) and upload its "
        'outputs as JSONL lines `{"id": …, "text": …}`; they are scored with HarmonicEval and ranked overall, '
        "per task and per criterion."
    )
    headline = "overall"
    board_name_suffix = "-inputs"
    filters = (
        Filter("task", "Task", (ALL, *MODEL_TASKS), ALL),
        Filter("rank_by", "Rank by", ("overall", *CRITERIA), "overall"),
        Filter("columns", "Columns", ("criteria", "tasks"), "criteria", kind="radio"),
    )
    plot = Plot(
        x="criterion",
        y="score",
        color="place",
        title="Criterion profile of the top models",
        y_lim=(1, 5),
        sort=tuple(CRITERIA),
        tooltip=tuple(PLOT_COLUMNS),
        colours=tuple(PLACE_COLOURS.items()),
    )
    pinned_columns = 2
    table_api = ("task", "rank_by")
    column_weights = {
        "rank": 0.7,
        "name": 1.6,
        "interval": 1.35,
        "vs above": 1.1,
        "note": 1.5,
        "submitter": 1.1,
        "id": 1.7,
    }

    # -------------------------------------------------------------------------- intake and worker
    def read_file(self, data: bytes, bench: Benchmark, max_bytes: int | None) -> list[dict]:
        return validate_outputs(data, bench.ids, max_bytes=max_bytes)

    def load_benchmark(self, loader: str, options: dict, board: str) -> Benchmark:
        from mmjudge.leaderboard.benchmarks import _loader_inputs

        return _loader_inputs(loader, options, board)

    def score(self, job: ScoringJob) -> Scored:
        """HarmonicEval over the engine's stream (bounded chunks, each distinct image decoded once per
        chunk); the lease is checked at every row, so a job re-queued while it ran stops within a chunk."""
        from mmjudge.stream import stream_rows

        inputs = {it["id"]: it for it in job.benchmark.inputs()}
        items = [{**inputs[o["id"]], "text": o["text"]} for o in job.payload]
        metric = harmonic_eval(job)
        rows: list[dict] = []
        for _, row in stream_rows(metric, items, chunk_size=max(1, int(job.settings["batch_size"]))):
            job.check()
            rows.append(json_safe(row))  # a criterion the judge failed on is NaN in memory, null when stored
        self._add_explanations(metric, items, rows, job)
        job.check()
        signatures = list(dict.fromkeys(r["signature"] for r in rows))
        if len(signatures) != 1:
            raise RuntimeError(f"one submission gave {len(signatures)} signatures")
        # The criteria the judge rates: a text-only judge is not asked those that see the image (needs_image),
        # which are then neither means nor failures.
        return Scored(signatures[0], summarise_models(rows, metric.rated_criteria), rows)

    def _add_explanations(self, metric: Any, items: list[dict], rows: list[dict], job: ScoringJob) -> None:
        """The judge's explanations for the first few items (shown on the submission page)."""
        from mmjudge.judges.base import JudgeCapabilityError
        from mmjudge.stream import stream_rows

        k = int(job.settings.get("explain_examples") or 0)
        if k <= 0:
            return
        job.check()
        by_id = {r["id"]: r for r in rows}
        try:
            for _, explained in stream_rows(metric, items[:k], explain=True):
                for key, value in explained.items():
                    if key.endswith("_explanation"):
                        by_id[explained["id"]][key] = value
        except JudgeCapabilityError:  # the judge cannot generate text: no explanations, scores unaffected
            return

    # ---------------------------------------------------------------------------------- the board
    def rank(self, entries: Sequence[Any], filters: Mapping[str, str], settings: Mapping[str, Any]) -> list[dict]:
        task = filters.get("task") or ALL
        return rank_models(
            entries,
            task=None if task == ALL else task,
            criterion=filters.get("rank_by") or "overall",
            max_failed_share=float(settings["max_failed_share"]),
            bootstrap=int(settings["bootstrap"]),
            seed=int(settings["seed"]),
        )

    def view(self, tables: list[dict], index: int, filters: Mapping[str, str], context: ViewContext) -> TrackView:
        """Each row shows the ranked figure's interval, whether it is separable from the row above, and how
        many items the judge failed on; a row the judge failed on too often is listed without a rank."""
        import pandas as pd

        task, rank_by = filters.get("task") or ALL, filters.get("rank_by") or "overall"
        if not tables:
            empty = pd.DataFrame(columns=PLOT_COLUMNS)
            return TrackView(frame([], ["rank", "name"]), "No scored model submissions yet.", empty)
        table = tables[index]
        rows = public_rows(table)
        sizes = {e.id: e.summary.get("n") for e in context.entries}
        head = ["rank", "name", "overall"] + ([rank_by] if rank_by != "overall" else [])
        if filters.get("columns") == "tasks" and task == ALL:
            body = [f"task:{t}" for t in MODEL_TASKS if any(f"task:{t}" in r for r in rows)]
        else:
            body = [c for c in CRITERIA if c != rank_by and any(c in r for r in rows)]
        shown = [
            {
                **r,
                "interval": interval_text(r),
                "vs above": separable_text(r),
                "judge failures": failures_text(r, sizes.get(r["id"])),
            }
            for r in rows
        ]
        # What identifies a row (note, submitter, id) comes before the criteria, so no one has to scroll
        # sideways to see who a row is.
        columns = head + ["interval", "vs above", "judge failures", "note", "submitter", "id"] + body
        return TrackView(
            frame(shown, columns), self._caption(table, tables, rows, task, rank_by, context), self._plot(rows)
        )

    def _caption(self, table: dict, tables: list, rows: list, task: str, rank_by: str, context: ViewContext) -> str:
        max_failed = float(context.settings["max_failed_share"])
        others = f" — {len(tables) - 1} other signature group(s) are listed separately." if len(tables) > 1 else ""
        return (
            f"Benchmark **{markdown_text(table['benchmark'])}**: ranked by **{markdown_text(rank_by)}** on task "
            f"**{markdown_text(task)}** among {len(rows)} submission(s) with comparable signatures; "
            f"{INTERVAL_NOTE} **judge failures**: items the judge could not rate; above {100 * max_failed:g}% a row "
            f"is listed without a rank. Signature: `{safe_code(table['signature'])}`{others}  \nPlot: "
            + ", ".join(f"{PLACES[k]} = {markdown_text(r['name'])}" for k, r in enumerate(rows[:TOP_PLOTTED]))
        )

    def _plot(self, rows: list[dict]) -> Any:
        import pandas as pd

        points = [
            {"place": PLACES[k], "name": r["name"], "criterion": c, "score": rounded(r[c])}
            for k, r in enumerate(rows[:TOP_PLOTTED])
            for c in CRITERIA
            if r.get(c) is not None
        ]
        # Every place is in the data (an empty one with no score, so no line): the colour domain never
        # changes, and a row ranked later gets its line from a plain data update. The legend lists only
        # the places with a row (Plot.legend).
        points += [
            {"place": p, "name": "", "criterion": CRITERIA[0], "score": None} for p in PLACES[len(rows[:TOP_PLOTTED]) :]
        ]
        return pd.DataFrame(points, columns=PLOT_COLUMNS)

    def breakdown(self, summary: dict) -> tuple[list[str], list[dict], list[str]]:
        lines = []
        if "failed_items" in summary:
            which = ", ".join(f"{c} {k}" for c, k in summary.get("failures", {}).items() if k)
            lines.append(
                f"**Judge failures:** {summary['failed_items']} of {summary['n']} items"
                + (f" ({which})" if which else "")
            )
        table = [{"task": t, **dict(part.items())} for t, part in summary["tasks"].items()]
        table.append(
            {
                "task": ALL,
                "overall": summary["overall"],
                **summary["criteria"],
                "n": summary["n"],
                "failed": summary.get("failed_items"),
            }
        )
        if summary.get("examples"):
            lines.append("#### Example explanations")
            for ex in summary["examples"]:
                lines.append(
                    f"- **{markdown_text(ex['criterion'])}** on `{safe_code(ex['id'])}` "
                    f"({markdown_text(ex['task'])}), score {rounded(ex['score'], 2)}: "
                    f"text “{markdown_text(ex['text'])}” — {markdown_text(ex['explanation'])}"
                )
        return lines, table, ["task", "overall", *CRITERIA, "n", "failed"]

    # -------------------------------------------------------------------------------- downloads
    def example_line(self, bench: Benchmark, item: dict) -> dict:
        return text_example_line(item)

    def line_fields(self, bench: Benchmark) -> dict[str, str]:
        return text_line_fields()

    def guide_steps(self, bench: Benchmark, settings: Mapping[str, Any], words: GuideWords) -> list[str]:
        return output_steps(bench, words, self.name) + [
            f"**Scoring**: HarmonicEval rates every text 1–5 on {', '.join(CRITERIA)} with the board's judge; rows are "
            "ranked overall, per task and per criterion, each with a 95% bootstrap interval over the items, and "
            "marked when separable from the row above (paired bootstrap on the same items). Items the judge "
            f"cannot rate are counted; above {100 * float(settings['max_failed_share']):g}% of the items a submission "
            "is shown but not ranked.",
        ]
