"""``mmjudge metaeval``: from metric scores and a benchmark's human judgments to the papers' tables.

Examples::

    mmjudge metaeval --dataset mmhe --scores bleu.jsonl --scores fleur.jsonl --names BLEU FLEUR --out out/
    mmjudge metaeval --dataset mmhe --metric harmonic_eval --model Qwen/Qwen2.5-VL-7B-Instruct --out out/
    mmjudge metaeval --dataset flickr8k_expert --data-dir ~/data/flickr8k --scores cider.csv --out out/f8k
    mmjudge metaeval --combine out/f8k/results.json out/pascal/results.json --out out/table8

Writes the tables (``accuracy``, ``criterion_correlation``, ``benchmarks``) as Markdown/CSV/JSON,
``records.csv`` (every figure with its interval), ``results.json`` and ``heatmap.png``, and prints the
Markdown tables.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mmjudge import distributed
from mmjudge.commands._judge_flags import add_judge_options, judge_options, key_values
from mmjudge.metaeval.bootstrap import DEFAULT_RESAMPLES
from mmjudge.metaeval.core import PROTOCOLS
from mmjudge.metaeval.correlation import MEASURES
from mmjudge.metaeval.pairwise import BEST_OF, TIES
from mmjudge.paths import check_out_folder

EXAMPLES = """\
examples:
  mmjudge metaeval --dataset mmhe --scores bleu.jsonl --scores fleur.jsonl --names BLEU FLEUR --out out/
  mmjudge metaeval --dataset mmhe --metric harmonic_eval --model Qwen/Qwen2.5-VL-7B-Instruct
  mmjudge metaeval --dataset flickr8k_expert --data-dir ~/data/flickr8k --scores cider.csv --out out/f8k
  mmjudge metaeval --combine out/f8k/results.json out/pascal/results.json --out out/table8
  mmjudge metaeval --dataset pascal50s --data-dir ~/data/pascal --pairwise --scores fleur.jsonl --model …
"""


def load_judgments(args: argparse.Namespace):
    """The benchmark's :class:`HumanJudgments`: from ``--judgments FILE.json`` or the loader of ``--dataset``."""
    from mmjudge.human_judgments import HumanJudgments

    if args.judgments:  # the versioned file of docs/metaeval.md, checked record by record
        check_input_file(args.judgments, "--judgments", "human judgments file")
        return HumanJudgments.load(args.judgments)
    try:
        from mmjudge.datasets import human_judgments
    except ImportError as err:
        raise ValueError(f"benchmark loaders are not available ({err}); pass --judgments FILE.json.") from None
    kwargs: dict[str, Any] = key_values(args.dataset_option, "--dataset-option")
    if args.data_dir:
        kwargs["data_dir"] = args.data_dir
    return human_judgments(args.dataset, **kwargs)


def collect_scores(args: argparse.Namespace, judgments) -> dict[str, dict]:
    """Metric name → scores, from ``--scores`` files and ``--metric`` runs, in the order given."""
    from mmjudge.metaeval import read_scores, score_items
    from mmjudge.metaeval.scores import join_line, join_scores

    files = args.scores or []
    metrics = args.metric or []
    names = display_names(args)
    scores: dict[str, dict] = {}
    for name, path in zip(names, files):
        # Joined to the benchmark now (by id, or by image and text), so a file that does not fit fails early.
        scores[name] = join_scores(read_scores(path), judgments, name)
        line = join_line(name, scores[name])
        if line and distributed.is_main():
            print(line)
    if metrics:
        options = judge_options(args)
        for name, metric in zip(names[len(files) :], metrics):
            scores[name] = score_items(judgments, metric, args.config, **options)
            if args.save_scores and distributed.is_main():
                _save_scores(scores[name], _saved_scores_path(args.out, name))
    return scores


def display_names(args: argparse.Namespace) -> list[str]:
    """The metrics' names, one per ``--scores`` file then per ``--metric``: ``--names``, else the file stems
    and metric names."""
    files, metrics = args.scores or [], args.metric or []
    names = list(args.names or [])
    if names and len(names) != len(files) + len(metrics):
        raise ValueError(
            f"--names gives {len(names)} name(s) for {len(files)} --scores file(s) and {len(metrics)} --metric(s)."
        )
    if not names:
        names = [Path(f).stem for f in files] + [m if not args.config else f"{m}:{args.config}" for m in metrics]
    if len(set(names)) != len(names):
        raise ValueError(f"metric names must be unique, but got {names}; use --names.")
    return names


def _saved_scores_path(out: str, name: str) -> Path:
    return Path(out) / f"scores_{name.replace(':', '_')}.jsonl"


def check_out_spares_inputs(args: argparse.Namespace) -> None:
    """No file ``--out`` receives (the tables, ``records.csv``, ``results.json``, ``heatmap.png``, the
    ``--save-scores`` files) is one the command reads (``--scores``, ``--judgments``, ``--combine``, the files of
    ``--data-dir``): refused in one line before anything is read or written."""
    from mmjudge.metaeval.output import output_files
    from mmjudge.paths import check_writes_spare_reads

    if not args.out:
        return
    files = output_files(args.out, args.format)
    if args.save_scores and args.metric:
        files += [_saved_scores_path(args.out, name) for name in display_names(args)[len(args.scores or []) :]]
    writes = [("--out", path, f"--out {args.out} (its {path.name})") for path in files]
    reads = [("--scores", f) for f in args.scores or []] + [("--combine", f) for f in args.combine or []]
    reads += [("--judgments", args.judgments)] if args.judgments else []
    reads += [("--data-dir", args.data_dir)] if args.data_dir else []
    check_writes_spare_reads(writes, reads)


def _save_scores(scores: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for item_id, values in scores.items():
            f.write(json.dumps({"id": item_id, **values}) + "\n")


def run(args: argparse.Namespace) -> int:
    from mmjudge.metaeval import MetaEvalResult, meta_evaluate, write_outputs

    check_out_folder(args.out)
    if args.save_scores and not args.out:
        raise ValueError("--save-scores writes into the --out folder: give --out DIR.")
    check_out_spares_inputs(args)
    if args.combine:
        if args.dataset or args.judgments or args.scores or args.metric:
            raise ValueError("--combine takes saved results only; do not mix it with --dataset/--scores/--metric.")
        for path in args.combine:
            check_input_file(path, "--combine", "results.json of an earlier run")
        results = [r for path in args.combine for r in MetaEvalResult.load_all(path)]
    else:
        if not (args.dataset or args.judgments):
            raise ValueError("give --dataset NAME (or --judgments FILE.json), or --combine results.json ….")
        if not (args.scores or args.metric or args.pairwise):
            raise ValueError("give at least one --scores FILE or --metric NAME (or --pairwise).")
        for path in args.scores or []:  # cheap checks before the benchmark is read
            check_input_file(path, "--scores", "score file")
        judgments = load_judgments(args)
        scores = collect_scores(args, judgments)
        measures = [m.strip() for m in args.measures.split(",")] if args.measures else list(MEASURES)
        if args.pairwise:  # one accuracy table: the pairwise judge beside the metrics turned into pairs
            results = [pairwise_result(args, judgments, scores)]
        else:
            results = [
                meta_evaluate(
                    judgments,
                    scores,
                    measures=measures,
                    protocol=args.protocol,
                    best_of=args.best_of,
                    ties=args.ties,
                    bootstrap=args.bootstrap,
                    seed=args.seed,
                    confidence=args.confidence,
                    progress=True,
                )
            ]
    if not distributed.is_main():  # under a launcher, one process writes (the others computed the same)
        return 0
    if args.out:
        markdown, written = write_outputs(results, args.out, args.format, measure=args.table_measure, ci=not args.no_ci)
    else:  # no folder asked for: the tables go to stdout only
        from mmjudge.metaeval.tables import all_tables

        markdown, written = "\n".join(t.markdown(not args.no_ci) for t in all_tables(results, args.table_measure)), []
    print(markdown)
    if not args.combine:
        for line in results[0].failure_lines():  # also under each table; here once, plainly
            print(line)
        _print_comparison(results[0])
    if args.out:
        print(f"wrote {len(written)} files to {args.out}")
    return 0


def pairwise_result(args: argparse.Namespace, judgments, scores: dict[str, dict]):
    """``--pairwise``: HarmonicEval's head-to-head judge on every human pair, in one accuracy table with the
    metrics' scores turned into pairs (:mod:`mmjudge.metaeval.pairwise_judges`)."""
    import mmjudge
    from mmjudge.metaeval.pairwise_judges import compare_judgments, pairwise_meta_evaluate

    judge = mmjudge.load("harmonic_eval", **judge_options(args)).pairwise()
    preferences = compare_judgments(judge, judgments, args.best_of, progress=distributed.is_main())
    options = dict(best_of=args.best_of, ties=args.ties, bootstrap=args.bootstrap, seed=args.seed)
    return pairwise_meta_evaluate(
        judgments, {"harmonic_eval:pairwise": preferences}, scores, confidence=args.confidence, **options
    )


def check_input_file(path: str, flag: str, what: str) -> None:
    """``path`` is a regular file: else one line saying what it is instead (a folder, a device, a symbolic
    link loop) or that it does not exist."""
    from mmjudge.paths import not_a_regular_file

    problem = not_a_regular_file(path)
    if problem is not None:
        raise ValueError(f"{flag} {path}: {problem}; give the {what}.")
    if not Path(path).is_file():
        raise FileNotFoundError(f"{flag} {path}: {what} does not exist.")


def _print_comparison(result) -> None:
    """Paired bootstrap: is the best metric's headline figure reliably above each other metric's?"""
    if len(result.metrics) < 2 or not result.resamples:
        return
    heads = {m: result.headline(m) for m in result.metrics}
    heads = {m: h for m, h in heads.items() if h is not None and h["value"] == h["value"]}
    if len(heads) < 2:
        return
    best = max(heads, key=lambda m: heads[m]["value"])
    figure = {k: heads[best][k] for k in ("measure", "task", "criterion", "kind", "subset") if k in heads[best]}
    print(f"Paired bootstrap vs the best ({best}), {figure}:")
    for metric in heads:
        if metric != best:
            c = result.compare(best, metric, **figure)
            print(
                f"  {best} − {metric}: {100 * c['difference']:+.1f} ({100 * c['ci_low']:+.1f} to "
                f"{100 * c['ci_high']:+.1f}); share of resamples where {metric} is not worse: "
                f"{c['share_b_not_worse']:.3f}"
            )
    print()


def add_parser(sub) -> None:
    p = sub.add_parser(
        "metaeval",
        help="correlate metric scores with human judgments (papers' tables)",
        description="Meta-evaluate metrics: correlate their scores with a benchmark's human judgments and "
        "print the papers' tables (to stdout, and into --out when given).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    src = p.add_argument_group("benchmark")
    src.add_argument("--dataset", help="benchmark name (mmhe, flickr8k_expert, pascal50s, …)")
    src.add_argument("--data-dir", dest="data_dir", help="local folder of the benchmark's files")
    src.add_argument(
        "--dataset-option",
        dest="dataset_option",
        action="append",
        metavar="KEY=VALUE",
        help="any other loader option, e.g. cache_dir=… (JSON value)",
    )
    src.add_argument(
        "--judgments",
        metavar="FILE.json",
        help="human judgments as a JSON file (schema in docs/metaeval.md; written by `mmjudge dataset "
        "judgments`), instead of --dataset",
    )
    src.add_argument(
        "--combine", nargs="+", metavar="RESULTS_JSON", help="merge saved results into one benchmark table"
    )
    met = p.add_argument_group("metrics")
    met.add_argument(
        "--scores",
        action="append",
        metavar="FILE",
        help="JSONL/CSV with id (or image and text) and score columns; null = a failed item (repeatable)",
    )
    met.add_argument(
        "--metric", action="append", metavar="NAME", help="mmjudge metric to run on the items (repeatable)"
    )
    met.add_argument(
        "--pairwise",
        action="store_true",
        help="judge every human pair head to head with HarmonicEval (both orders) and report pairwise accuracy "
        "beside the --scores/--metric metrics turned into pairs",
    )
    met.add_argument("--names", nargs="+", help="display names, one per --scores then per --metric")
    met.add_argument("--config", help="metric configuration for --metric")
    add_judge_options(met)
    met.add_argument("--save-scores", action="store_true", help="also write the --metric scores as JSONL in --out")
    _add_meta_evaluation_options(p.add_argument_group("meta-evaluation"))
    p.set_defaults(func=run)


def _add_meta_evaluation_options(opt) -> None:
    opt.add_argument(
        "--out",
        help="output folder for tables, records.csv, results.json and heatmap.png (default: print the tables only)",
    )
    opt.add_argument("--format", default="md,csv,json", help="table formats, comma-separated (md,csv,json)")
    opt.add_argument(
        "--ties", choices=TIES, default="wrong", help="a metric tie in a pair is wrong (default) or half right"
    )
    opt.add_argument(
        "--best-of",
        dest="best_of",
        choices=BEST_OF,
        default="majority",
        help="how annotators' best-of-N choices become pairs (default majority)",
    )
    opt.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="per_judgment",
        help="one row per human judgment (default) or per item with the mean human score",
    )
    opt.add_argument("--measures", help=f"correlations to compute, comma-separated (default {','.join(MEASURES)})")
    opt.add_argument(
        "--table-measure",
        dest="table_measure",
        choices=MEASURES,
        help="correlation shown in the criterion table (default: the benchmark's, e.g. tau_c)",
    )
    opt.add_argument(
        "--bootstrap", type=int, default=DEFAULT_RESAMPLES, help=f"resamples (default {DEFAULT_RESAMPLES}; 0 = none)"
    )
    opt.add_argument("--confidence", type=float, default=0.95, help="interval coverage (default %(default)g)")
    opt.add_argument("--seed", type=int, default=0, help="bootstrap seed (default %(default)s)")
    opt.add_argument("--no-ci", dest="no_ci", action="store_true", help="leave the intervals out of the Markdown")
