"""What a Judges-track upload may hold, checked before it is accepted: one judge's **verdicts** on a benchmark of
judges (JSON Lines in the judge card's format, :mod:`mmjudge.judge_card.verdicts`), or the **card.json** that
``mmjudge judge-card`` wrote (its rows taken strictly: known benchmarks and measures, values in range, ``n``
positive, ``low ≤ value ≤ high``). A file that starts with ``[`` is a card; anything else is verdicts. Every
problem is one :class:`~mmjudge.leaderboard.validation.SubmissionError` line.

>>> from types import SimpleNamespace
>>> bench = SimpleNamespace(card_name="vl_rewardbench", kind="pairs", ids=["a", "b"], subsets=("general",))
>>> read_judge_upload(b'{"id": "a", "preferred": 1}\\n{"id": "b", "preferred": null}\\n', bench, None)
{'kind': 'verdicts', 'verdicts': {'a': 1.0, 'b': nan}}
>>> read_judge_upload(b'{"id": "a", "preferred": 1}\\n', bench, None)
Traceback (most recent call last):
...
mmjudge.leaderboard.validation.SubmissionError: missing 1 id(s) of the benchmark: 'b'; give every item a line ...
>>> row = {"benchmark": "vl_rewardbench", "subset": "", "measure": "accuracy", "value": 0.7, "low": 0.6, "high": 0.8,
...        "n": 10}
>>> read_judge_upload(json.dumps([row]).encode(), bench, None)["rows"][0]["value"]
0.7
>>> read_judge_upload(json.dumps([{**row, "low": 0.75}]).encode(), bench, None)
Traceback (most recent call last):
...
mmjudge.leaderboard.validation.SubmissionError: card row 1 (vl_rewardbench accuracy): expected low ≤ value ≤ high, ...
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from mmjudge.errors import id_differences, shown_ids
from mmjudge.jsonl import JsonLineError, decode
from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS, PAIRS, RANKINGS, RATINGS, JudgeBenchmark
from mmjudge.judge_card.measures import FIELDS
from mmjudge.leaderboard.validation import MAX_ID_CHARS, SubmissionError, size_reason

SHARE, SIGNED = (0.0, 1.0), (-1.0, 1.0)
MAX_MESSAGE = 300  # an engine message quoting a hostile id stays one readable line


def headline_measure(bench: JudgeBenchmark) -> str:
    """The figure a benchmark of judges is ranked by: its rules' measure (pairs, rankings), its correlation
    (ratings).

    >>> headline_measure(JUDGE_BENCHMARKS["caparena"]), headline_measure(JUDGE_BENCHMARKS["flickr8k_cf"])
    ('agreement', 'tau_b')
    >>> headline_measure(JUDGE_BENCHMARKS["mllm_judge_batch"]), headline_measure(JUDGE_BENCHMARKS["mllm_judge_score"])
    ('levenshtein', 'pearson')
    """
    return bench.headline


def card_measures(bench: JudgeBenchmark) -> dict[str, tuple[float, float]]:
    """Each measure a card may give for ``bench`` and its range (what :func:`mmjudge.judge_card.run.judge_card`
    writes for it).

    >>> sorted(card_measures(JUDGE_BENCHMARKS["vl_rewardbench"]))  # doctest: +NORMALIZE_WHITESPACE
    ['accuracy', 'cost_usd', 'macro_accuracy', 'no_answer', 'order_agreement', 'position_bias', 'samples_per_s',
     'tokens']
    >>> card_measures(JUDGE_BENCHMARKS["mllm_judge_batch"])["levenshtein"]  # a normalised distance
    (0.0, 1.0)
    """
    main = headline_measure(bench)
    out = {main: SIGNED if bench.kind == RATINGS else SHARE}
    rules = bench.rules
    if bench.kind == PAIRS:
        if rules.macro_over:
            out[f"macro_{main}"] = SHARE
        if rules.without_ties:
            out[f"{main}_without_ties"] = SHARE
        if rules.prompt_accuracy:
            out["prompt_accuracy"] = SHARE
        if rules.trade_offs:
            out.update(trade_off_sensitivity=SHARE, conflict_matching_rate=SHARE)
    if bench.kind in (PAIRS, RANKINGS):  # a judge run compares head to head
        out.update(position_bias=SIGNED, order_agreement=SHARE)
    # tokens and cost_usd: what an API judge's run used (judge_card.run.usage_rows); every card from such a judge
    # has them, so a card that carries them must be accepted.
    out.update(no_answer=SHARE, samples_per_s=(0.0, math.inf), tokens=(0.0, math.inf), cost_usd=(0.0, math.inf))
    return out


def read_judge_upload(data: bytes, bench: Any, max_bytes: int | None) -> dict:
    """``{"kind": "verdicts", "verdicts": {id: value}}`` (every id of ``bench``, in its order; NaN: no answer) or
    ``{"kind": "card", "rows": [...]}`` (the card's rows for ``bench``'s benchmark of judges)."""
    if not isinstance(data, (bytes, bytearray)):
        raise SubmissionError(f"expected the file's bytes, but got {type(data).__name__}.")
    if max_bytes is not None and len(data) > max_bytes:
        raise SubmissionError(size_reason(len(data), max_bytes))
    try:
        text = decode(data)
    except JsonLineError as err:
        raise SubmissionError(str(err)) from None
    if text.lstrip().startswith("["):
        return {"kind": "card", "rows": check_card(text, bench)}
    return {"kind": "verdicts", "verdicts": check_verdicts(text, bench)}


def check_verdicts(text: str, bench: Any) -> dict[str, float]:
    """A verdict file read by the judge card's own reader, then held to the board's rule: every id of the
    benchmark exactly once (``null`` is the way to say "no answer"), no other id."""
    from mmjudge.judge_card.verdicts import parse_verdicts

    sizes = None
    if bench.kind == RANKINGS:  # a ranking orders every answer of its item
        sizes = {it["id"]: len(it["responses"]) for it in bench.public_items()}
    try:
        verdicts = parse_verdicts(text.splitlines(), bench.kind, sizes=sizes)
    except ValueError as err:
        raise SubmissionError(_short(err)) from None
    if not verdicts:
        raise SubmissionError("the file holds no verdicts.")
    long = next((i for i in verdicts if len(i) > MAX_ID_CHARS), None)
    if long is not None:
        raise SubmissionError(f"an id has {len(long)} characters ({long[:40]!r}…); the limit is {MAX_ID_CHARS}.")
    missing, unknown = id_differences(verdicts, bench.ids)
    if unknown:
        raise SubmissionError(
            f"{len(unknown)} verdict(s) name ids the benchmark does not have ({shown_ids(unknown)}); ids are the "
            "benchmark's own `id` (see its inputs)."
        )
    if missing:
        raise SubmissionError(
            f"missing {len(missing)} id(s) of the benchmark: {shown_ids(missing)}; give every item a line (null "
            "where your judge gave no answer)."
        )
    return {i: verdicts[i] for i in bench.ids}


def check_card(text: str, bench: Any) -> list[dict]:
    """A ``card.json``: a JSON list of rows, each exactly :data:`~mmjudge.judge_card.measures.FIELDS`, checked
    (:func:`check_row`); no figure twice; the rows of ``bench``'s benchmark of judges, which must hold its
    headline figure and only subsets the board's copy has."""
    try:
        rows = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise SubmissionError(f"not a card.json: not valid JSON ({str(err)[:80]}).") from None
    if not isinstance(rows, list) or not rows:
        raise SubmissionError(
            "not a card.json: expected a non-empty JSON list of rows, as `mmjudge judge-card` writes."
        )
    seen: set[tuple[str, str, str]] = set()
    mine = []
    for k, found in enumerate(rows, 1):
        checked = check_row(found, k)
        key = (checked["benchmark"], checked["subset"], checked["measure"])
        if key in seen:
            raise SubmissionError(f"card row {k}: {_figure(checked)} is given twice.")
        seen.add(key)
        if checked["benchmark"] == bench.card_name:
            if checked["subset"] and checked["subset"] not in bench.subsets:
                raise SubmissionError(
                    f"card row {k}: subset {checked['subset'][:60]!r} is not one of {bench.card_name}'s on this board "
                    f"({', '.join(bench.subsets) or 'none'})."
                )
            mine.append(checked)
    main = headline_measure(JUDGE_BENCHMARKS[bench.card_name])
    if not any(r["subset"] == "" and r["measure"] == main and r["value"] is not None for r in mine):
        others = sorted({r["benchmark"] for r in rows if isinstance(r, dict)} - {bench.card_name})
        where = f"; its rows are for {', '.join(others)}" if others else ""
        raise SubmissionError(
            f"the card has no {main} figure over all of {bench.card_name}, the benchmark this board scores as"
            f"{where}; submit it to that benchmark's board entry."
        )
    return mine


def check_row(found: Any, k: int) -> dict:
    """One card row as it may be shown: exactly the fields, a known benchmark and measure, a subset only for the
    main measure, ``value`` (or ``null`` with ``n`` 0 and no bounds: no figure) and its bounds in the measure's
    range with ``low ≤ value ≤ high``, ``n`` a whole number, positive when there is a value."""
    where = f"card row {k}"
    if not isinstance(found, dict):
        raise SubmissionError(f"{where}: expected a JSON object, but got {type(found).__name__}.")
    if set(found) != set(FIELDS):
        raise SubmissionError(
            f"{where}: expected the fields {', '.join(FIELDS)} (as `mmjudge judge-card` writes them), but got "
            f"{', '.join(map(repr, list(found)[:8]))[:200]}."
        )
    name, subset, measure = found["benchmark"], found["subset"], found["measure"]
    if not isinstance(name, str) or name not in JUDGE_BENCHMARKS:
        raise SubmissionError(
            f"{where}: unknown benchmark {str(name)[:60]!r}; a card's are {', '.join(JUDGE_BENCHMARKS)}."
        )
    bench = JUDGE_BENCHMARKS[name]
    measures = card_measures(bench)
    if not isinstance(measure, str) or measure not in measures:
        raise SubmissionError(
            f"{where}: {name} has no measure {str(measure)[:60]!r}; its measures are {', '.join(measures)}."
        )
    if not isinstance(subset, str) or len(subset) > MAX_ID_CHARS:
        raise SubmissionError(f"{where}: `subset` must be a string of at most {MAX_ID_CHARS} characters.")
    if subset and measure != headline_measure(bench):
        raise SubmissionError(f'{where}: {name} gives {measure} over the whole benchmark only (subset must be "").')
    n = found["n"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise SubmissionError(f"{where}: `n` must be a whole number of items, but got {n!r}.")
    low, value, high = found["low"], found["value"], found["high"]
    if value is None:
        if low is not None or high is not None or n:
            raise SubmissionError(f"{where}: a figure without a value has no bounds and n 0 (no items).")
        return dict(found)
    lo, hi = measures[measure]
    for field, number in (("value", value), ("low", low), ("high", high)):
        if number is None and field != "value":
            continue
        if not _number(number) or not lo <= number <= hi:
            raise SubmissionError(
                f"{where} ({_figure(found)}): `{field}` must be a number in [{lo:g}, {hi:g}], but got {number!r}."
            )
    if (low is None) != (high is None):
        raise SubmissionError(f"{where} ({_figure(found)}): give both `low` and `high`, or neither.")
    if low is not None and not low <= value <= high:
        raise SubmissionError(
            f"{where} ({_figure(found)}): expected low ≤ value ≤ high, but got low {low}, value {value}, high {high}."
        )
    if n < 1:
        raise SubmissionError(f"{where} ({_figure(found)}): `n` must be positive for a figure with a value.")
    return {k: found[k] for k in FIELDS}


def figure_of(rows: Sequence[Mapping[str, Any]], subset: str, measure: str) -> Mapping[str, Any] | None:
    """The row of ``measure`` on ``subset`` (``""``: the whole benchmark), or None."""
    return next((r for r in rows if r.get("subset") == subset and r.get("measure") == measure), None)


def _figure(row: Mapping[str, Any]) -> str:
    subset = f" on {str(row['subset'])[:40]!r}" if row.get("subset") else ""
    return f"{row['benchmark']} {row['measure']}{subset}"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"
