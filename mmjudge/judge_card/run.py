"""A judge card: one judge on benchmarks of judges (``mmjudge judge-card``).

For each benchmark asked for: its verdict file when one is given (no judge is loaded for it), else the judge
runs on it — pairs compared head to head in both orders, captions and answers rated, the answers of a ranked row
compared two by two — through
:func:`mmjudge.stream.score_file` into ``<out>/runs/``: answers cached, rows written as they finish, a killed
run resumed, each ``torchrun`` process judging its share. A run's file is named by everything its rows depend
on (the judge's signature, the benchmark, its data folder, ``limit``), so a card with another judge or other
data never reads them. A benchmark that cannot run (no data folder, no judge and no verdicts) says why and the
others go on.

>>> plans = plan(["vl_rewardbench"], Settings(), judge=False)
>>> plans[0].missing()
'no data: pass --data-dir vl_rewardbench=DIR, a folder holding the Hub Parquet of MMInstruction/VL-RewardBench ...'
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmjudge import distributed
from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS, PAIRS, RANKINGS, JudgeBenchmark
from mmjudge.judge_card.measures import figures, judge_diagnostics, number, row
from mmjudge.paths import not_a_regular_file

# A failure these raise is a benchmark that cannot be scored (its reason is the message), not a crash.
BENCHMARK_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, ImportError)


@dataclass
class Settings:
    """Where each benchmark's data and verdicts are, its loader options, how many items, the bootstrap, where the
    card goes, and the judge's name on it."""

    data_dirs: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, str] = field(default_factory=dict)
    dataset_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    limit: int | None = None
    bootstrap: int = 1000
    seed: int = 0
    confidence: float = 0.95
    out: str | None = None
    progress: bool = True
    name: str | None = None


@dataclass
class Plan:
    """One benchmark: where its judgments come from (``verdicts`` or ``judge``) and each need with whether it is
    here."""

    benchmark: str
    source: str
    needs: list[tuple[str, bool, str]]

    def missing(self) -> str | None:
        return next((why for _, present, why in self.needs if not present), None)


@dataclass
class Card:
    """What :func:`judge_card` returns: the rows of ``card.json``, the judge and its signature, each benchmark's
    plan, why the ones that did not run did not, and what the judge cost."""

    judge: str
    signature: str
    rows: list[dict]
    plans: list[Plan]
    not_run: dict[str, str] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    sources: dict[str, str] = field(default_factory=dict)
    # Each figure's bootstrap values, (benchmark, subset, measure) → array: drawn from the seed and the benchmark
    # alone, so two cards' values of one figure pair up (the leaderboard tells separable rows apart with them).
    replicates: dict[tuple[str, str, str], Any] = field(default_factory=dict)


def plan(benchmarks: list[str], settings: Settings, judge: bool) -> list[Plan]:
    """What each benchmark needs and what is here (the dry run); nothing is loaded."""
    out = []
    for name in benchmarks:
        bench = JUDGE_BENCHMARKS[name]
        folder = settings.data_dirs.get(name)
        needs = [_data_need(bench, folder)]
        verdict_file = settings.verdicts.get(name)
        if verdict_file:
            path = Path(verdict_file).expanduser()
            problem = not_a_regular_file(path)  # a FIFO, a folder, /dev/zero: said as such, never "no such file"
            present = problem is None and path.is_file()
            needs.append(("verdicts", present, f"--verdicts {name}={verdict_file}: {problem or 'no such file'}"))
            source = "verdicts"
        else:
            needs.append(("judge", judge, f"no judge and no verdicts: give --judge/--model, or --verdicts {name}=FILE"))
            source = "judge"
        out.append(Plan(name, source, needs))
    return out


def _data_need(bench: JudgeBenchmark, folder: str | None) -> tuple[str, bool, str]:
    if folder:
        return ("data", Path(folder).expanduser().is_dir(), f"--data-dir {bench.name}={folder}: not a folder")
    return ("data", False, f"no data: pass --data-dir {bench.name}=DIR, a folder holding {bench.needs}")


def judge_card(benchmarks: list[str], settings: Settings, judge: Any = None) -> Card:
    """Score ``judge`` (HarmonicEval options as a dict, a ready ``HarmonicEval``, or ``None`` for verdicts only)
    on ``benchmarks`` (:data:`~mmjudge.judge_card.benchmarks.JUDGE_BENCHMARKS` names). With ``settings.out``,
    writes ``card.json``, ``card.md``, ``card.png`` and ``signature.json`` there."""
    from mmjudge.metaeval.bootstrap import check_confidence, check_resamples

    check_resamples(settings.bootstrap)  # a bad setting is one line before anything runs, not every benchmark's
    check_confidence(settings.confidence)  # reason for not running
    plans = plan(benchmarks, settings, judge is not None)
    metric = _Lazy(judge)
    card = Card(settings.name or "", "", [], plans)
    for p in plans:
        why = p.missing()
        if why:
            card.not_run[p.benchmark] = why
            continue
        bench = JUDGE_BENCHMARKS[p.benchmark]
        try:
            rows, source = _score(bench, settings, metric, card.replicates)
        except BENCHMARK_ERRORS as err:
            card.not_run[p.benchmark] = _line(err)
            continue
        card.rows.extend(rows)
        card.sources[p.benchmark] = source
    if metric.built is not None:
        card.signature = str(metric.built.signature)
        card.judge = card.judge or metric.built.judge.describe()
        card.usage = metric.built.judge.usage_report()
    card.judge = card.judge or "verdicts"
    if settings.out and distributed.is_main():  # under torchrun one process writes (the others computed the same)
        from mmjudge.judge_card.output import write_card

        write_card(card, settings)
    return card


class _Lazy:
    """The judge's HarmonicEval, built the first time a benchmark needs it (a card of verdicts loads none). A
    judge that cannot be built is tried once: each later benchmark gets the same reason, not another load."""

    def __init__(self, judge: Any):
        self.judge, self.built = judge, None
        self.failed: BaseException | None = None

    def get(self) -> Any:
        if self.failed is not None:
            raise self.failed
        if self.built is None:
            if isinstance(self.judge, Mapping):
                from mmjudge.metrics.harmonic_eval.metric import HarmonicEval

                try:
                    self.built = HarmonicEval(**dict(self.judge))
                except BENCHMARK_ERRORS as err:
                    self.failed = err
                    raise
            else:
                self.built = self.judge
        return self.built


def _score(bench: JudgeBenchmark, settings: Settings, metric: _Lazy, replicates: dict) -> tuple[list[dict], str]:
    """The rows of one benchmark and where its judgments came from (each figure's bootstrap values into
    ``replicates``)."""
    verdict_file = settings.verdicts.get(bench.name)
    common = dict(
        bootstrap=settings.bootstrap, seed=settings.seed, confidence=settings.confidence, replicates=replicates
    )
    he = None if verdict_file else metric.get()  # a judge that cannot be built fails before the data is read
    score = {PAIRS: _score_pairs, RANKINGS: _score_rankings}.get(bench.kind, _score_ratings)
    rows = score(bench, settings, he, common)
    return rows, f"verdicts {verdict_file}" if verdict_file else f"judge {he.judge.describe()}"


def _score_pairs(bench: JudgeBenchmark, settings: Settings, he: Any, common: dict) -> list[dict]:
    from mmjudge.judge_card import pairs as P

    folder, verdict_file = settings.data_dirs.get(bench.name), settings.verdicts.get(bench.name)
    found = P.read_pairs(bench, folder, settings.dataset_options.get(bench.name, {}), settings.limit)
    if verdict_file:
        from mmjudge.judge_card.verdicts import read_verdicts

        items = P.verdict_items(found, read_verdicts(verdict_file, "pairs"), settings.limit)
        return figures(bench.name, items, bench.rules, **common)
    rows, speed = _head_to_head(bench, settings, he, (P.pair_item(pair) for pair in found))
    out = figures(bench.name, P.judged_items(found, iter(rows), bench), bench.rules, **common)
    out[-1:-1] = judge_diagnostics(bench.name, rows, he.criteria) + speed
    return out


def _score_rankings(bench: JudgeBenchmark, settings: Settings, he: Any, common: dict) -> list[dict]:
    """A rankings benchmark: a verdict file's rankings, or rankings derived from head-to-head comparisons of every
    two answers (:mod:`.rankings`)."""
    from mmjudge.judge_card import rankings as K

    folder, verdict_file = settings.data_dirs.get(bench.name), settings.verdicts.get(bench.name)
    found = K.read_rankings(bench, folder, settings.dataset_options.get(bench.name, {}), settings.limit)
    if verdict_file:
        from mmjudge.judge_card.verdicts import read_verdicts

        sizes = {r.id: len(r.responses) for r in found}
        said = K.verdict_rankings(found, read_verdicts(verdict_file, "rankings", sizes), settings.limit)
        return K.ranking_rows(bench, found, said, **common)
    rows, speed = _head_to_head(bench, settings, he, K.head_to_head_items(found))
    out = K.ranking_rows(bench, found, K.judged_rankings(found, iter(rows)), **common)
    out[-1:-1] = judge_diagnostics(bench.name, rows, he.criteria) + speed
    return out


def _head_to_head(
    bench: JudgeBenchmark, settings: Settings, he: Any, items: Iterable[Mapping[str, Any]]
) -> tuple[list[dict], list[dict]]:
    """A judge run of head-to-head ``items`` (both orders): its rows, and its speed and cost rows."""
    run = _run_path(settings, bench, he, settings.data_dirs.get(bench.name))
    write_items(items, run.with_suffix(".items.jsonl"))
    before = he.judge.usage_report()
    rows, speed = _judge_run(bench.name, he.pairwise(), run.with_suffix(".items.jsonl"), run, settings)
    return rows, speed + usage_rows(bench.name, before, he.judge.usage_report())


def _score_ratings(bench: JudgeBenchmark, settings: Settings, he: Any, common: dict) -> list[dict]:
    from mmjudge.judge_card import ratings as R

    folder, verdict_file = settings.data_dirs.get(bench.name), settings.verdicts.get(bench.name)
    judgments = R.read_judgments(bench, folder, settings.dataset_options.get(bench.name, {}), settings.limit)
    if verdict_file:
        from mmjudge.judge_card.verdicts import read_verdicts

        scores = R.verdict_scores(judgments, read_verdicts(verdict_file, "ratings"), settings.limit)
        return R.correlation_rows(bench, judgments, scores, "score", **common)
    run = _run_path(settings, bench, he, folder)
    fields = ("id", "task", "text", "image", "question")  # a question: MLLM-as-a-Judge's answers are to one
    items = ({k: it.get(k) for k in fields if it.get(k) is not None} for it in judgments.items)
    write_items(items, run.with_suffix(".items.jsonl"))
    before = he.judge.usage_report()
    rows, speed = _judge_run(bench.name, he, run.with_suffix(".items.jsonl"), run, settings)
    speed += usage_rows(bench.name, before, he.judge.usage_report())
    scores = {str(r.get("id")): {"overall": number(r.get("overall"))} for r in rows}
    out = R.correlation_rows(bench, judgments, scores, "overall", **common)
    out[-1:-1] = speed
    return out


def _judge_run(
    benchmark: str, metric: Any, items: Path, output: Path, settings: Settings
) -> tuple[list[dict], list[dict]]:
    """Run ``metric`` over the items file into ``output`` (resumable; sharded under ``torchrun``); its rows,
    and the items per second of the items this run judged (not those an earlier run had finished)."""
    from mmjudge.pairwise.summary import output_rows
    from mmjudge.stream import score_file

    start = time.perf_counter()
    summary = score_file(metric, str(items), str(output), keep=("id",), progress=settings.progress)
    seconds = time.perf_counter() - start
    done = max(summary.total - summary.resumed, 0) if not summary.complete else 0
    rows = list(output_rows(output))
    speed = [row(benchmark, "", "samples_per_s", done / seconds, None, None, done)] if done and seconds > 0 else []
    return rows, speed


TOKEN_FIELDS = ("prompt_tokens", "completion_tokens", "batch_prompt_tokens", "batch_completion_tokens")


def usage_rows(benchmark: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[dict]:
    """What one benchmark's run cost an API judge (its usage report after the run less before it): the tokens
    paid for (``n``: the requests) and, where the model has a list price, the estimated US dollars. Nothing for
    a local judge (it reports no usage) or a run answered from the cache.

    >>> rows = usage_rows("vl", {"requests": 2, "prompt_tokens": 10, "completion_tokens": 2, "cost_usd": 0.5},
    ...                   {"requests": 5, "prompt_tokens": 40, "completion_tokens": 5, "cost_usd": 0.75})
    >>> [(r["measure"], r["value"], r["n"]) for r in rows]
    [('tokens', 33.0, 3), ('cost_usd', 0.25, 3)]
    """
    if not after:
        return []
    before = before or {}
    requests = int(after.get("requests", 0)) - int(before.get("requests", 0))
    requests += int(after.get("batch_requests", 0)) - int(before.get("batch_requests", 0))
    if requests <= 0:
        return []
    tokens = sum(int(after.get(k, 0)) - int(before.get(k, 0)) for k in TOKEN_FIELDS)
    out = [row(benchmark, "", "tokens", float(tokens), None, None, requests)]
    if after.get("cost_usd") is not None:
        cost = float(after["cost_usd"]) - float(before.get("cost_usd") or 0.0)
        out.append(row(benchmark, "", "cost_usd", cost, None, None, requests))
    return out


def _run_path(settings: Settings, bench: JudgeBenchmark, metric: Any, folder: str | None) -> Path:
    from mmjudge._version import __version__
    from mmjudge.paths import cache_dir
    from mmjudge.reproduce.scoring import folder_fingerprint

    key = {
        "benchmark": bench.name,
        "signature": str(metric.signature),
        "data": folder_fingerprint(folder),
        "limit": settings.limit,
        "options": settings.dataset_options.get(bench.name, {}),
        "version": __version__,
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    base = Path(settings.out) if settings.out else cache_dir() / "judge_card"
    return base / "runs" / f"{bench.name}-{digest}.jsonl"


def write_items(items: Iterable[Mapping[str, Any]], path: Path) -> None:
    """The items of a judge run as its JSON Lines input, written whole or not at all. The temporary file is this
    call's own: under ``torchrun`` every process writes the same items, and a shared one let one process rename
    it away while another still wrote it (whose rename then failed, so it skipped the run the others waited in)."""
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with open(fd, "w", encoding="utf-8") as f:
            for item in items:
                f.write(json.dumps(item, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _line(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text if isinstance(err, ValueError) else f"{type(err).__name__}: {text}"
