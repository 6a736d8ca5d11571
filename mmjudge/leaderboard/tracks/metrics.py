"""The Metrics track: a metric author uploads per-item scores ``{"id", "score", …}`` for a human-judgment
benchmark; the worker runs the meta-evaluation and the board ranks metrics by agreement with humans
(the benchmark's headline figure, with its interval and whether it is separable from the row above).

>>> from mmjudge.leaderboard.benchmarks import get_benchmark
>>> track, bench = MetricsTrack(), get_benchmark("demo-judgments")
>>> track.example_line(bench, bench.public_items()[0])
{'id': 'demo-ic-0-0', 'score': 0.0}
>>> sorted(track.line_fields(bench))
['<criterion>', 'id', 'score']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mmjudge.leaderboard.benchmarks import CRITERIA, MODEL_TASKS, Benchmark
from mmjudge.leaderboard.display import INTERVAL_NOTE, frame, interval_text, rounded, separable_text
from mmjudge.leaderboard.protection import safe_code
from mmjudge.leaderboard.ranking import ALL, public_rows, rank_metrics, summarise_metaeval
from mmjudge.leaderboard.tracks import Filter, GuideWords, Scored, ScoringJob, Track, TrackView, ViewContext
from mmjudge.leaderboard.validation import validate_scores
from mmjudge.report import markdown_text

SUBMISSION_METRIC = "submission"  # the metric's name inside the meta-evaluation (one metric per job)


class MetricsTrack(Track):
    name = "metrics"
    label = "Metrics"
    about = (
        'upload your metric\'s per-item scores as `{"id": …, "score": …}` (optionally one column per criterion) '
        "for a human-judgment benchmark; the meta-evaluation ranks metrics by agreement with humans (Kendall τ, "
        "best-of-N accuracy)."
    )
    headline = "headline"
    filters = (
        Filter("task", "Task", (ALL, *MODEL_TASKS), ALL),
        Filter("criterion", "Criterion (blank = all)", ("", "overall", *CRITERIA), ""),
    )
    pinned_columns = 3
    table_api = ("benchmark", "task")
    column_weights = {"rank": 0.7, "name": 1.6, "interval": 1.35, "vs above": 1.1, "submitter": 1.1, "id": 1.7}

    # -------------------------------------------------------------------------- intake and worker
    def read_file(self, data: bytes, bench: Benchmark, max_bytes: int | None) -> dict:
        return validate_scores(data, bench.ids, max_bytes=max_bytes)

    def load_benchmark(self, loader: str, options: dict, board: str) -> Benchmark:
        from mmjudge.leaderboard.benchmarks import _loader_judgments

        return _loader_judgments(loader, options, board)

    def score(self, job: ScoringJob) -> Scored:
        """The meta-evaluation of the scores against the benchmark's human judgments, under the board's
        protocol (part of the signature)."""
        from mmjudge.metaeval import meta_evaluate
        from mmjudge.signature import Signature

        s = job.settings
        job.check()
        result = meta_evaluate(
            job.benchmark.judgments(),
            {SUBMISSION_METRIC: job.payload},
            bootstrap=int(s["bootstrap"]),
            seed=int(s["seed"]),
            protocol=s["protocol"],
            best_of=s["best_of"],
            ties=s["ties"],
        )
        signature = Signature.make(
            "metaeval",
            benchmark=job.benchmark.name,
            protocol=s["protocol"],
            best_of=s["best_of"],
            ties=s["ties"],
            bootstrap=int(s["bootstrap"]),
            seed=int(s["seed"]),
            confidence=result.options.get("confidence"),
        )
        records = result.to_dict()["records"]  # JSON-safe: NaN/inf → None, numpy scalars → numbers
        return Scored(str(signature), summarise_metaeval(result, SUBMISSION_METRIC), records)

    # ---------------------------------------------------------------------------------- the board
    def rank(self, entries: Sequence[Any], filters: Mapping[str, str], settings: Mapping[str, Any]) -> list[dict]:
        task = filters.get("task") or ALL
        return rank_metrics(entries, task=None if task == ALL else task, criterion=filters.get("criterion") or None)

    def view(self, tables: list[dict], index: int, filters: Mapping[str, str], context: ViewContext) -> TrackView:
        """The headline first with its interval and whether it is separable from the row above, then the
        correlation (τ) and accuracy figures filtered by task and criterion."""
        if not tables:
            return TrackView(frame([], ["rank", "name", "headline"]), "No scored metric submissions yet.")
        table = tables[index]
        rows = [{**r, "interval": interval_text(r), "vs above": separable_text(r)} for r in public_rows(table)]
        figures = [k for k in dict.fromkeys(k for r in rows for k in r) if ":" in k]
        columns = ["rank", "name", "headline", "interval", "vs above", "submitter", "id", *figures]
        caption = (
            f"Benchmark **{markdown_text(table['benchmark'])}**; headline = {markdown_text(table['headline'])}. "
            f"{INTERVAL_NOTE} Every figure's interval is on the submission's page. "
            f"Signature: `{safe_code(table['signature'])}`"
        )
        return TrackView(frame(rows, columns), caption)

    def breakdown(self, summary: dict) -> tuple[list[str], list[dict], list[str]]:
        lines = []
        head = summary.get("headline") or {}
        if head:
            lines.append(
                f"**Headline:** {markdown_text(head.get('label'))} = {rounded(head.get('value'))} "
                f"[{rounded(head.get('ci_low'))}, {rounded(head.get('ci_high'))}]"
            )
        table = [{"figure": f"{summary['measure']} {k}", **v} for k, v in summary["correlations"].items()]
        table += [{"figure": f"accuracy {k}", **v} for k, v in summary["accuracy"].items()]
        return lines, table, ["figure", "value", "ci_low", "ci_high"]

    # -------------------------------------------------------------------------------- downloads
    def example_line(self, bench: Benchmark, item: dict) -> dict:
        return {"id": item["id"], "score": 0.0}

    def line_fields(self, bench: Benchmark) -> dict[str, str]:
        fields = {
            "id": "an item id, each exactly once",
            "score": "your metric's score of the item (a finite number; higher = better)",
        }
        criteria = [c for c in bench.judgments().criteria if c != "overall"]
        if criteria:
            fields["<criterion>"] = f"optional: one score column per criterion among {', '.join(criteria)}"
        return fields

    def guide_steps(self, bench: Benchmark, settings: Mapping[str, Any], words: GuideWords) -> list[str]:
        criteria = [c for c in bench.judgments().criteria if c != "overall"]
        lines = [
            "1. **Get the items**: *Inputs (zip)* — `inputs.jsonl` (one item per line: `id`, `task`, `text` to "
            "score, `references`, and the `image` file or its upstream `image_path` where the images may not be "
            "redistributed) — or *Inputs (Parquet)*.",
            f"2. **Score every item with your metric** ({len(bench.ids)} items).",
            "3. **Write one JSON object per line** (UTF-8), every id exactly once:",
            "",
            "   ```json",
            f"   {words.example}",
            "   ```",
            "",
        ]
        if criteria:
            lines.append(
                f"   Optionally add one score column per criterion ({', '.join(criteria)}); each is correlated with "
                "that criterion's human ratings."
            )
        return lines + [
            f"4. **Submit** the file (at most {words.size}) on the *Submit* tab (track *metrics*, benchmark "
            f"*{words.name}*), or from a terminal:",
            "",
            "   ```",
            f"   {words.command('download', 'items.zip')}",
            f"   {words.command('submit', 'scores.jsonl')} --name my-metric",
            "   ```",
            "",
            f"**Scoring**: the meta-evaluation compares your scores with the human judgments (protocol "
            f"`{settings['protocol']}`, {int(settings['bootstrap'])} bootstrap resamples, "
            f"seed {int(settings['seed'])}); "
            "the headline is the benchmark's usual figure, with its interval, and each row says whether it is "
            "separable from the row above.",
        ]
