"""The Judges track: which judge can I trust? A team names its judge and uploads, for one benchmark of judges
(VL-RewardBench, Multimodal RewardBench, MLLM-as-a-Judge's pairs, scores and rankings, Multi-Crit, CapArena,
Pascal-50S; the caption sets with human scores), either its **verdicts** (JSON Lines in the judge card's format,
one line per item) — which the worker scores against the board's copy of the benchmark through the judge card
(:func:`mmjudge.judge_card.run.judge_card`, verdicts path: no judge is loaded) — or the **card.json** that
``mmjudge judge-card`` wrote, checked row by row (:mod:`mmjudge.leaderboard.judge_uploads`) and shown as
*reported by the submitter*, in its own signature group, never ranked with the board's own figures.

Rows are ranked per benchmark by its headline measure (accuracy, agreement, Kendall τ, Pearson r; a distance
such as MLLM-as-a-Judge's normalised Levenshtein distance smallest first) or the figure the filters pick (a subset
such as VL-RewardBench's groups, another measure), each with the card's bootstrap interval and whether it is
separable from the row above: the card draws its resamples from the seed and the benchmark alone, so two judges'
bootstrap values of a figure pair up (:func:`separable_resamples`).

>>> from mmjudge.leaderboard.benchmarks import get_benchmark
>>> track, bench = JudgesTrack(), get_benchmark("demo-judge-pairs")
>>> bench.card_name, len(bench.ids), bench.subsets[:3]
('vl_rewardbench', 24, ('MMMU-Pro', 'MathVerse', 'POVID'))
>>> track.example_line(bench, bench.public_items()[0])
{'id': 'demo-wildvision-1', 'preferred': 0}
>>> sorted(bench.public_items()[0])
['id', 'image', 'question', 'responses', 'task']
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS, PAIRS, RANKINGS
from mmjudge.judge_card.measures import AGREEMENT_MEASURES, DISTANCE_MEASURES
from mmjudge.leaderboard.benchmarks import available_benchmarks, get_benchmark
from mmjudge.leaderboard.display import frame, interval_text, rounded, separable_text
from mmjudge.leaderboard.judge_benchmarks import JudgeBoardBenchmark, load_judge_benchmark
from mmjudge.leaderboard.judge_uploads import figure_of, headline_measure, read_judge_upload
from mmjudge.leaderboard.protection import safe_code
from mmjudge.leaderboard.ranking import _base, _ranked, by_benchmark, group_by_signature, public_rows
from mmjudge.leaderboard.tracks import Filter, GuideWords, Scored, ScoringJob, Track, TrackView, ViewContext
from mmjudge.leaderboard.uncertainty import separable_resamples
from mmjudge.report import markdown_text
from mmjudge.signature import Signature

HEADLINE = "headline"  # the measure filter's default: each benchmark's own headline measure
MEASURES = (HEADLINE, *AGREEMENT_MEASURES, *DISTANCE_MEASURES)
BOARD, REPORTED = "board", "reported"  # where a row's figures come from
SOURCE_WORDS = {BOARD: "scored by the board", REPORTED: "reported by the submitter"}
LOAD_ERRORS = (ValueError, OSError, ImportError)  # a benchmark that cannot be read (told where it is used)


class JudgesTrack(Track):
    name = "judges"
    label = "Judges"
    about = (
        "name your judge and upload its verdicts on a benchmark of judges (which of two responses people "
        "preferred; scores of captions or answers; rankings of answers), or the `card.json` of `mmjudge judge-card`; "
        "the board scores the verdicts with the judge card and ranks judges by the benchmark's accuracy, agreement, "
        "correlation (or distance, lowest first) with its interval (a card's own figures are shown apart, as "
        "reported by the submitter)."
    )
    headline = "value"
    board_name_suffix = "-judges"
    pinned_columns = 2
    table_api = ("benchmark", "subset", "measure")
    column_weights = {
        "rank": 0.5,
        "name": 1.6,
        "interval": 1.4,
        "vs above": 1.0,
        "n": 0.6,
        "no_answer": 0.9,
        "note": 1.6,
        "id": 1.7,
    }

    def __init__(self) -> None:
        self._filters: tuple[Filter, ...] = ()
        self._filters_for: tuple[str, ...] | None = None

    @property  # type: ignore[override]
    def filters(self) -> tuple[Filter, ...]:
        """Subset (every subset of the board's Judges benchmarks; blank: the whole benchmark) and measure."""
        names = tuple(available_benchmarks(self.name))
        if names != self._filters_for:
            subsets: list[str] = []
            for board in names:
                try:
                    subsets += list(get_benchmark(board).subsets)
                except LOAD_ERRORS:
                    continue
            self._filters = (
                Filter("subset", "Subset (blank = the whole benchmark)", ("", *dict.fromkeys(subsets)), ""),
                Filter("measure", "Measure", MEASURES, HEADLINE),
            )
            self._filters_for = names
        return self._filters

    # -------------------------------------------------------------------------- intake and worker
    def read_file(self, data: bytes, bench: JudgeBoardBenchmark, max_bytes: int | None) -> dict:
        return read_judge_upload(data, bench, max_bytes)

    def load_benchmark(self, loader: str, options: dict, board: str) -> JudgeBoardBenchmark:
        """The board's copy of the benchmark of judges ``loader`` (:func:`~mmjudge.leaderboard.judge_benchmarks.
        load_judge_benchmark`: ``data_dir``, optionally ``limit``; ``demo: true`` for the demo's pairs)."""
        return load_judge_benchmark(loader, options, board, self.name)

    def score(self, job: ScoringJob) -> Scored:
        """A card's rows as reported; verdicts through :func:`~mmjudge.judge_card.run.judge_card` against the
        board's copy of the benchmark (written to the job's folder for the card to read)."""
        bench, payload = job.benchmark, job.payload
        main = headline_measure(JUDGE_BENCHMARKS[bench.card_name])
        job.check()
        if payload["kind"] == "card":
            signature = Signature.make("judge_card", benchmark=bench.card_name, source=REPORTED)
            summary = {"source": REPORTED, "benchmark": bench.card_name, "headline": main, "figures": payload["rows"]}
            return Scored(str(signature), summary, payload["rows"])
        from mmjudge.judge_card.run import Settings, judge_card

        s, name = job.settings, bench.card_name
        bootstrap, seed, confidence = int(s["bootstrap"]), int(s["seed"]), 0.95
        with _verdict_file(job.work_dir, payload["verdicts"], FIELD[bench.kind]) as path:
            card = judge_card(
                [name],
                Settings(
                    data_dirs={name: bench.data_dir},
                    verdicts={name: str(path)},
                    dataset_options={name: dict(bench.options)},
                    limit=bench.limit,
                    bootstrap=bootstrap,
                    seed=seed,
                    confidence=confidence,
                    progress=False,
                ),
            )
        job.check()
        if name in card.not_run:
            raise ValueError(card.not_run[name])
        figures = [
            {**r, "replicates": _values(card.replicates.get((name, r["subset"], r["measure"])))} for r in card.rows
        ]
        signature = Signature.make(
            "judge_card",
            benchmark=name,
            data=bench.fingerprint,
            source=BOARD,
            bootstrap=bootstrap,
            seed=seed,
            confidence=confidence,
        )
        summary = {"source": BOARD, "benchmark": name, "headline": main, "figures": figures}
        key = FIELD[bench.kind]
        rows = [{"id": i, key: None if v != v else v} for i, v in payload["verdicts"].items()]
        return Scored(str(signature), summary, rows)

    # ---------------------------------------------------------------------------------- the board
    def rank(self, entries: Sequence[Any], filters: Mapping[str, str], settings: Mapping[str, Any]) -> list[dict]:
        """One table per benchmark and signature group (board-scored and reported apart), rows ranked by the
        chosen figure; a row with more items unanswered than ``max_failed_share`` is listed without a rank."""
        subset, measure = str(filters.get("subset") or ""), str(filters.get("measure") or HEADLINE)
        most = float(settings["max_failed_share"])
        tables = []
        for benchmark, part in by_benchmark(entries).items():
            for group in group_by_signature(part):
                first = group[0].summary
                shown = first.get("headline", "") if measure == HEADLINE else measure
                rows = [_row(e, subset, measure, most) for e in group]
                rows = _ranked(rows, "value", higher_is_better=shown not in DISTANCE_MEASURES)
                above: list | None = None
                for r in rows:
                    values = r.pop("_replicates")
                    r["separable"] = separable_resamples(above, values) if r["rank"] is not None and above else None
                    if r["rank"] is not None:
                        above = values
                tables.append(
                    {
                        "benchmark": benchmark,
                        "signature": group[0].signature,
                        "rows": rows,
                        "by": "value",
                        "source": first.get("source", BOARD),
                        "card_name": first.get("benchmark", ""),
                        "measure": shown,
                        "subset": subset,
                    }
                )
        return sorted(tables, key=lambda t: (t["source"] != BOARD, -len(t["rows"])))

    def view(self, tables: list[dict], index: int, filters: Mapping[str, str], context: ViewContext) -> TrackView:
        """The chosen figure with its interval and whether it is separable from the row above, the items it
        counts and those without a verdict; the caption says where the figures come from."""
        if not tables:
            return TrackView(frame([], ["rank", "name", "value"]), "No scored judge submissions yet.")
        table = tables[index]
        rows = [{**r, "interval": interval_text(r), "vs above": separable_text(r)} for r in public_rows(table)]
        columns = ["rank", "name", "value", "interval", "vs above", "n", "no_answer", "note", "submitter", "id"]
        shown = frame(rows, columns).rename(columns={"value": table["measure"] or "value"})
        return TrackView(shown, _caption(tables, index, float(context.settings["max_failed_share"])))

    def breakdown(self, summary: dict) -> tuple[list[str], list[dict], list[str]]:
        """Where the figures come from, the headline with its interval, then every row of the card."""
        source, main = summary.get("source", BOARD), summary.get("headline", "")
        figures = summary.get("figures") or []
        head = figure_of(figures, "", main) or {}
        missing = figure_of(figures, "", "no_answer") or {}
        lines = [
            f"**Figures {SOURCE_WORDS.get(source, source)}**"
            + (
                " (a `card.json` as uploaded: the board did not compute them)"
                if source == REPORTED
                else " (the uploaded verdicts through the judge card, against the board's copy of "
                f"`{summary.get('benchmark')}`)"
            ),
            f"**{main}** = {rounded(head.get('value'))} "
            f"{interval_text({'ci_low': head.get('low'), 'ci_high': head.get('high')})} over {head.get('n')} items · "
            f"**no answer**: {_count(missing)}",
        ]
        table = [
            {"subset": r["subset"] or "(all)", **{k: r[k] for k in ("measure", "value", "low", "high", "n")}}
            for r in figures
        ]
        return lines, table, ["subset", "measure", "value", "low", "high", "n"]

    # -------------------------------------------------------------------------------- downloads
    def example_line(self, bench: JudgeBoardBenchmark, item: dict) -> dict:
        if bench.kind == RANKINGS:
            return {"id": item["id"], "ranking": list(range(len(item["responses"])))}
        return {"id": item["id"], FIELD[bench.kind]: 0 if bench.kind == PAIRS else 0.0}

    def line_fields(self, bench: JudgeBoardBenchmark) -> dict[str, str]:
        if bench.kind == PAIRS:
            said = "0 = the first of the item's `responses` is better, 1 = the second, 0.5 = a tie, null = no answer"
        elif bench.kind == RANKINGS:
            said = (
                "the indices of the item's `responses` from best to worst, each once ([2, 0, 1]: the third is the "
                "best), null = no answer"
            )
        else:
            said = "your judge's score of the caption or answer (a finite number; higher = better), null = no answer"
        return {"id": "an item id, each exactly once", FIELD[bench.kind]: said}

    def guide_steps(self, bench: JudgeBoardBenchmark, settings: Mapping[str, Any], words: GuideWords) -> list[str]:
        card = JUDGE_BENCHMARKS[bench.card_name]
        ask, shows = {
            PAIRS: (
                "**Ask your judge which of the two responses is better**",
                "`question`, `responses` (the two texts)",
            ),
            RANKINGS: (
                "**Ask your judge to rank the responses, best first**",
                "`question`, `responses` (3 or 4 texts)",
            ),
        }.get(bench.kind, ("**Have your judge score every caption or answer**", "`text`, and `question` if any"))
        return [
            f"1. **Get the items**: *Inputs (zip)* — `inputs.jsonl` (one item per line: `id`, `task`, `image`, "
            f"{shows}) and `images/` — or *Inputs (Parquet)*. The human preferences are the answer key and are not "
            "included.",
            f"2. {ask} ({len(bench.ids)} items; your prompt, your model, any framework).",
            "3. **Write one JSON object per line** (UTF-8), every id exactly once — the verdict file "
            "`mmjudge judge-card --verdicts` reads:",
            "",
            "   ```json",
            f"   {words.example}",
            "   ```",
            "",
            f"   {self.line_fields(bench)[FIELD[bench.kind]]}.",
            f"4. **Submit** the file (at most {words.size}) on the *Submit* tab (track *judges*, benchmark "
            f"*{words.name}*, your judge's name), or from a terminal:",
            "",
            "   ```",
            f"   {words.command('download', 'items.zip')}",
            f"   {words.command('submit', 'verdicts.jsonl')} --name my-judge",
            "   ```",
            "",
            "   **Or a judge card**: the `card.json` that `mmjudge judge-card` wrote, submitted the same way, is "
            "checked row by row (known benchmarks and measures, values in range, low ≤ value ≤ high) and its "
            f"`{bench.card_name}` rows are shown as **reported by the submitter**, in their own table, never ranked "
            "with the board's.",
            "",
            f"**Scoring**: the judge card scores your verdicts against the board's copy ({card.source}; "
            f"{int(settings['bootstrap'])} bootstrap resamples, seed {int(settings['seed'])}). Rows are ranked by "
            f"{headline_measure(card)}{_direction(headline_measure(card))} (or the subset and measure the filters "
            "pick) with a 95% interval, and each says "
            "whether it is separable from the row above. Items without a verdict count as no answer; above "
            f"{100 * float(settings['max_failed_share']):g}% of them a row is shown but not ranked.",
        ]


FIELD = {PAIRS: "preferred", "ratings": "score", RANKINGS: "ranking"}  # a verdict line's value


def _direction(measure: str) -> str:
    """`` (lower is better)`` for a distance, else nothing.

    >>> _direction("levenshtein"), _direction("accuracy")
    (' (lower is better, ranked smallest first)', '')
    """
    return " (lower is better, ranked smallest first)" if measure in DISTANCE_MEASURES else ""


def _row(entry: Any, subset: str, measure: str, most: float) -> dict:
    """One submission's row for the chosen figure: value, interval, bootstrap values (for "vs above"), items
    counted, the share and number without an answer, and why it is not ranked."""
    s = entry.summary
    figures = s.get("figures") or []
    wanted = s.get("headline", "") if measure == HEADLINE else measure
    found = figure_of(figures, subset, wanted) or {}
    missing = figure_of(figures, "", "no_answer") or {}
    share, total = missing.get("value"), missing.get("n") or 0
    failed = round(share * total) if share is not None and total else None
    note = ""
    if share is not None and share > most:
        note = (
            f"not ranked: no answer on {failed} of {total} items ({100 * share:.1f}%), more than the "
            f"{100 * most:g}% allowed"
        )
    elif found.get("value") is None:
        on = f" on subset {subset!r}" if subset else ""
        note = f"no {wanted} figure{on}"
    return {
        **_base(entry),
        "measure": wanted,
        "subset": subset,
        "value": found.get("value"),
        "ci_low": found.get("low"),
        "ci_high": found.get("high"),
        "n": found.get("n"),
        "no_answer": share,
        "failed": failed,
        "source": SOURCE_WORDS.get(s.get("source", BOARD), ""),
        "ranked": not note,
        "note": note,
        "_replicates": found.get("replicates"),
    }


def _count(missing: Mapping[str, Any]) -> str:
    """``3 of 24 items (12.5%)``: the items without an answer, from the card's ``no_answer`` row.

    >>> _count({"value": 0.125, "n": 24}), _count({})
    ('3 of 24 items (12.5%)', '—')
    """
    share, total = missing.get("value"), missing.get("n")
    if share is None or not total:
        return "—"
    return f"{round(share * total)} of {total} items ({100 * share:.1f}%)"


def _caption(tables: list[dict], index: int, most: float) -> str:
    table = tables[index]
    try:
        subsets = ", ".join(markdown_text(x) for x in get_benchmark(table["benchmark"]).subsets) or "none"
    except LOAD_ERRORS:
        subsets = "unknown (the benchmark is not configured now)"
    on = f" on subset **{markdown_text(table['subset'])}**" if table["subset"] else " over the whole benchmark"
    if table["source"] == REPORTED:
        source = (
            "**Reported by the submitters**: figures from their `card.json`, as uploaded — the board did not "
            "compute them and never ranks them with its own; whether two rows are separable cannot be told from a card."
        )
    else:
        source = (
            "**Scored by the board**: each judge's verdicts against the board's copy of the benchmark, through the "
            "judge card (`mmjudge judge-card --verdicts` gives the same figures). **interval**: 95% bootstrap over "
            "the items; **vs above**: *yes* when the two rows' bootstrap values (the same resamples for every "
            "judge) separate them, *no* when chance could swap them."
        )
    others = f" — {len(tables) - 1} other signature group(s) are listed separately." if len(tables) > 1 else ""
    return (
        f"Benchmark **{markdown_text(table['benchmark'])}** (scored as `{safe_code(table['card_name'])}`): ranked by "
        f"**{markdown_text(table['measure'])}**{_direction(table['measure'])}{on} among {len(table['rows'])} "
        f"judge(s). {source} **no_answer**: "
        f"the share of items without a verdict, left out of every figure; above {100 * most:g}% a row is listed "
        f"without a rank. Subsets: {subsets}. Signature: `{safe_code(table['signature'])}`{others}"
    )


def _values(replicates: Any) -> list | None:
    """Bootstrap values as stored (rounded; NaN as None)."""
    if replicates is None:
        return None
    return [None if not math.isfinite(float(v)) else round(float(v), 6) for v in replicates]


@contextmanager
def _verdict_file(work_dir: Path | None, verdicts: Mapping[str, float], key: str) -> Iterator[Path]:
    """The verdicts as the JSON Lines file the judge card reads: in the job's folder (a worker), else a
    temporary one."""
    lines = "".join(json.dumps({"id": i, key: None if v != v else v}) + "\n" for i, v in verdicts.items())
    if work_dir is not None:
        path = Path(work_dir) / "verdicts.jsonl"
        path.write_text(lines, encoding="utf-8")
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="mmjudge-judges-") as tmp:
        path = Path(tmp) / "verdicts.jsonl"
        path.write_text(lines, encoding="utf-8")
        yield path
