"""The Arena track: a team uploads its model's outputs ``{"id", "text"}`` for an Arena benchmark's inputs
(checked as on the Models track); the worker has the judge compare them head to head with the benchmark's
**anchor systems'** outputs on the same inputs (:func:`mmjudge.leaderboard.arena_scoring.score_arena`: both
orders, per criterion, Bradley–Terry over the battles), and the board ranks submissions by their strength
relative to the anchors, with its bootstrap interval, win rates overall and per criterion, the battles
judged and those the judge gave no preference for.

The job keeps its rounds of battles in its own folder (:attr:`ScoringJob.work_dir`), so a worker killed
mid-job loses nothing: the next worker resumes the rounds and judges only the missing battles.

>>> from mmjudge.leaderboard.benchmarks import get_benchmark
>>> track, bench = ArenaTrack(), get_benchmark("demo-arena")
>>> track.example_line(bench, bench.public_items()[0])
{'id': 'demo-ic-1', 'text': "<your model's caption for this image>"}
>>> sig = arena_signature("mmjudge=0.1.0|metric=harmonic_eval|config=pairwise", bench.anchors(), 64, 200, 0)
>>> for field in sig.split("|")[3:]:
...     print(field)
anchors=anchor-plain,anchor-clear,anchor-background
anchors_fingerprint=6e90cae1039a
items_per_pair=64
bootstrap=200
seed=0
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from mmjudge.leaderboard.benchmarks import CRITERIA, Benchmark
from mmjudge.leaderboard.display import frame, interval_text, rounded
from mmjudge.leaderboard.protection import safe_code
from mmjudge.leaderboard.ranking import _base, _ranked, by_benchmark, group_by_signature, public_rows
from mmjudge.leaderboard.tracks import GuideWords, Scored, ScoringJob, Track, TrackView, ViewContext
from mmjudge.leaderboard.tracks.models import harmonic_eval, output_steps, text_example_line, text_line_fields
from mmjudge.leaderboard.validation import SubmissionError, validate_outputs
from mmjudge.report import markdown_text
from mmjudge.signature import Signature

RATE_PREFIX = "win_rate:"  # a criterion's win rate column: win_rate:<criterion>
STRENGTH_NOTE = (
    "**strength**: Bradley–Terry log-odds relative to the anchors' mean (+1 beats an average anchor with "
    "probability 0.73); **interval**: 95% bootstrap over the items (each row's own: rows never meet each "
    "other, so two rows whose intervals overlap may swap); **win_rate**: the mean probability that the "
    "submission's text is the better one over its battles, overall and per criterion (`win_rate:<criterion>`); "
    "**battles**: battles with a preference; **no_preference**: battles the judge gave no preference for "
    "(never counted as a tie)."
)


def arena_signature(metric_signature: str, anchors: Mapping[str, Sequence[Mapping[str, Any]]], *settings: int) -> str:
    """The pairwise judge's signature plus what else decides an Arena row's figures: the anchors (names and
    a fingerprint of their texts) and the schedule's ``items_per_pair``, ``bootstrap`` and ``seed``."""
    texts = json.dumps({name: [o["text"] for o in outputs] for name, outputs in anchors.items()}, sort_keys=True)
    items_per_pair, bootstrap, seed = settings
    return str(
        Signature.from_string(metric_signature).with_fields(
            anchors=list(anchors),
            anchors_fingerprint=hashlib.sha256(texts.encode("utf-8")).hexdigest()[:12],
            items_per_pair=items_per_pair,
            bootstrap=bootstrap,
            seed=seed,
        )
    )


@contextmanager
def arena_folder(work_dir: Path | None, signature: str) -> Iterator[Path]:
    """Where the job's rounds go: ``<work_dir>/arena`` (kept while the job is unfinished, so a re-queued job
    resumes there), started afresh when an earlier attempt ran under another signature (the board's judge or
    settings changed in between); a temporary folder outside a worker."""
    if work_dir is None:
        with tempfile.TemporaryDirectory(prefix="mmjudge-arena-") as tmp:
            yield Path(tmp)
        return
    folder, key = work_dir / "arena", work_dir / "arena.signature"
    if key.is_file() and key.read_text(encoding="utf-8") != signature:
        shutil.rmtree(folder, ignore_errors=True)
    key.write_text(signature, encoding="utf-8")
    yield folder


def no_preference_note(summary: Mapping[str, Any], max_share: float) -> str:
    """Why a row is listed without a rank ("" when it is ranked): the judge gave no preference in more than
    ``max_share`` of its battles, so its strength would rest on the battles that were easy to judge.

    >>> no_preference_note({"battles": 90, "no_preference": 10}, 0.05)
    'not ranked: the judge gave no preference in 10 of 100 battles (10.0%), more than the 5% allowed'
    >>> no_preference_note({"battles": 99, "no_preference": 1}, 0.05)
    ''
    """
    missing = int(summary.get("no_preference") or 0)
    judged = int(summary.get("battles") or 0) + missing
    if not judged or missing / judged <= max_share:
        return ""
    return (
        f"not ranked: the judge gave no preference in {missing} of {judged} battles ({100 * missing / judged:.1f}%), "
        f"more than the {100 * max_share:g}% allowed"
    )


def rank_arena(entries: Sequence[Any], max_failed_share: float) -> list[dict]:
    """One table per benchmark and signature group (largest first), rows ranked by ``strength``."""
    tables = []
    for benchmark, part in by_benchmark(entries).items():
        for group in group_by_signature(part):
            rows = []
            for e in group:
                s, note = e.summary, no_preference_note(e.summary, max_failed_share)
                rates = {f"{RATE_PREFIX}{c}": v for c, v in (s.get("win_rates") or {}).items() if c != "overall"}
                rows.append(
                    {
                        **_base(e),
                        **{k: s.get(k) for k in ("strength", "ci_low", "ci_high", "win_rate")},
                        **rates,
                        "battles": s.get("battles"),
                        "no_preference": s.get("no_preference"),
                        "ranked": not note,
                        "note": note,
                    }
                )
            anchors = list(group[0].summary.get("anchors") or {})
            tables.append(
                {
                    "benchmark": benchmark,
                    "signature": group[0].signature,
                    "rows": _ranked(rows, "strength"),
                    "by": "strength",
                    "anchors": anchors,
                }
            )
    return sorted(tables, key=lambda t: -len(t["rows"]))


class ArenaTrack(Track):
    name = "arena"
    label = "Arena"
    about = (
        "upload your model's outputs for an Arena benchmark's inputs, as for Models; the judge compares them "
        "head to head with the benchmark's anchor systems on the same inputs (both orders, per criterion), and "
        "models are ranked by Bradley–Terry strength relative to the anchors, with win rates per criterion."
    )
    headline = "strength"
    board_name_suffix = "-arena"
    pinned_columns = 2
    table_api = ("benchmark",)
    column_weights = {"rank": 0.7, "name": 1.6, "interval": 1.5, "note": 1.5, "submitter": 1.1, "id": 1.7}

    # -------------------------------------------------------------------------- intake and worker
    def read_file(self, data: bytes, bench: Benchmark, max_bytes: int | None) -> list[dict]:
        return validate_outputs(data, bench.ids, max_bytes=max_bytes, track=self.label)

    def load_benchmark(self, loader: str, options: dict, board: str) -> Benchmark:
        """A loader's inputs (as for Models) with the anchors of ``settings.json``'s ``"anchors"``: name →
        outputs file (``{"id", "text"}`` lines for every input, checked like an upload)."""
        from mmjudge.leaderboard.arena_scoring import SUBMISSION
        from mmjudge.leaderboard.benchmarks import _loader_inputs

        options = dict(options)
        files = options.pop("anchors", None)
        if not isinstance(files, dict) or len(files) < 2 or SUBMISSION in files:
            raise ValueError(
                f'benchmark {board!r}: the Arena track needs "anchors": {{name: outputs file}} with two or more '
                f"anchor systems (none named {SUBMISSION!r})."
            )
        bench = _loader_inputs(loader, options, board)
        anchors = {str(name): _read_anchor(str(name), str(path), bench.ids) for name, path in files.items()}
        return replace(
            bench,
            track=self.name,
            title=f"{loader} arena",
            description=f"the inputs of {loader}; submit one text per id; it meets the anchor systems "
            f"{', '.join(anchors)} head to head",
            _anchors=lambda: anchors,
        )

    def score(self, job: ScoringJob) -> Scored:
        """The submission against the benchmark's anchors (:func:`~mmjudge.leaderboard.arena_scoring.score_arena`)
        with the board's judge and cache, in the job's folder; the lease is checked at every round."""
        from mmjudge.leaderboard.arena_scoring import score_arena

        s, bench = job.settings, job.benchmark
        anchors = bench.anchors()
        metric = harmonic_eval(job).pairwise()
        items_per_pair, bootstrap, seed = int(s["arena_items_per_pair"]), int(s["bootstrap"]), int(s["seed"])
        signature = arena_signature(str(metric.signature), anchors, items_per_pair, bootstrap, seed)
        job.check()
        with arena_folder(job.work_dir, signature) as folder:
            _, summary, rows = score_arena(
                metric,
                bench.inputs(),
                job.payload,
                anchors,
                folder,
                bootstrap=bootstrap,
                seed=seed,
                items_per_pair=items_per_pair,
                chunk_size=max(1, int(s["batch_size"])),
                check=job.check,
            )
        job.check()
        return Scored(signature, summary, rows)

    # ---------------------------------------------------------------------------------- the board
    def rank(self, entries: Sequence[Any], filters: Mapping[str, str], settings: Mapping[str, Any]) -> list[dict]:
        return rank_arena(entries, float(settings["max_failed_share"]))

    def view(self, tables: list[dict], index: int, filters: Mapping[str, str], context: ViewContext) -> TrackView:
        """Strength with its interval, the win rate, battles and those without a preference, who the row is,
        then the per-criterion win rates."""
        if not tables:
            return TrackView(frame([], ["rank", "name", "strength"]), "No scored arena submissions yet.")
        table = tables[index]
        rows = [{**r, "interval": interval_text(r)} for r in public_rows(table)]
        rates = [f"{RATE_PREFIX}{c}" for c in CRITERIA if any(f"{RATE_PREFIX}{c}" in r for r in rows)]
        columns = ["rank", "name", "strength", "interval", "win_rate", "battles", "no_preference", "note"]
        max_failed = float(context.settings["max_failed_share"])
        others = f" — {len(tables) - 1} other signature group(s) are listed separately." if len(tables) > 1 else ""
        caption = (
            f"Benchmark **{markdown_text(table['benchmark'])}**: ranked by **strength** among {len(rows)} "
            f"submission(s) with comparable signatures, each judged head to head against the anchors "
            f"{', '.join(markdown_text(a) for a in table['anchors'])}. {STRENGTH_NOTE} Above "
            f"{100 * max_failed:g}% of battles without a preference a row is listed without a rank. "
            f"Signature: `{safe_code(table['signature'])}`{others}"
        )
        return TrackView(frame(rows, columns + ["submitter", "id", *rates]), caption)

    def breakdown(self, summary: dict) -> tuple[list[str], list[dict], list[str]]:
        lines = [
            f"**Strength** (relative to the anchors' mean): {rounded(summary.get('strength'))} "
            f"{interval_text(summary)} · **win rate** {rounded(summary.get('win_rate'))} · **battles** "
            f"{summary.get('battles')} · **no preference** {summary.get('no_preference')} · battles judged in "
            f"this job, the anchors' among themselves included: {summary.get('judged')}"
        ]
        table = [{"figure": f"win rate: {c}", "value": v} for c, v in (summary.get("win_rates") or {}).items()]
        table += [{"figure": f"anchor {a}: strength", "value": v} for a, v in (summary.get("anchors") or {}).items()]
        return lines, table, ["figure", "value"]

    # -------------------------------------------------------------------------------- downloads
    def example_line(self, bench: Benchmark, item: dict) -> dict:
        return text_example_line(item)

    def line_fields(self, bench: Benchmark) -> dict[str, str]:
        return text_line_fields()

    def guide_steps(self, bench: Benchmark, settings: Mapping[str, Any], words: GuideWords) -> list[str]:
        anchors = ", ".join(f"`{safe_code(a)}`" for a in bench.anchors())
        return output_steps(bench, words, self.name) + [
            f"**Scoring**: the board's judge compares your text with each anchor system's ({anchors}) on the same "
            f"inputs — in both orders, so the slot a text sits in cancels out, on each of {', '.join(CRITERIA)} — "
            f"starting with {int(settings['arena_items_per_pair'])} items per anchor, more where your interval "
            "overlaps an anchor's. Rows are ranked by Bradley–Terry **strength** relative to the anchors' mean, "
            "with a 95% bootstrap interval over the items, the win rate overall and per criterion, and the "
            f"battles judged. Battles the judge gives no preference for are counted; above "
            f"{100 * float(settings['max_failed_share']):g}% of them a submission is shown but not ranked.",
        ]


def _read_anchor(name: str, path: str, ids: Sequence[str]) -> list[dict]:
    """One anchor system's outputs file, checked like an upload; one line naming the anchor otherwise."""
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as err:
        raise ValueError(f"anchor {name!r}: cannot read {path} ({err.strerror or err}).") from None
    try:
        return validate_outputs(data, ids, max_bytes=None, track="Arena")
    except SubmissionError as err:
        raise ValueError(f"anchor {name!r} ({path}): {err}") from None
