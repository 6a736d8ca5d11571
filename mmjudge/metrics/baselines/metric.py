"""Classic reference-based metrics as one mmjudge metric with a configuration per metric.

``config_name`` is one of ``bleu`` (BLEU-1..4), ``rouge_l``, ``meteor``, ``cider`` (CIDEr-D),
``spice`` (the official jar: Java and Stanford CoreNLP 3.6.0's jars, :mod:`.spice`), ``bertscore`` and
``bartscore``, or ``coco``: BLEU-1..4, ROUGE-L and CIDEr-D in one call, as the COCO
caption evaluation suite reports them (tokenised once, n-grams counted once for BLEU and CIDEr-D;
``meteor=True`` adds METEOR). BLEU, ROUGE-L, CIDEr-D, METEOR and SPICE reproduce pycocoevalcap's numbers
(PTB tokenisation and lower-casing first); BERTScore and BARTScore read the raw texts. The maths lives
in :mod:`mmjudge.metrics.baselines`.

Every result holds per-sample lists, ``corpus_<name>`` (the corpus figure pycocoevalcap reports: pooled
statistics for BLEU and METEOR, the mean otherwise), ``mean_<name>`` and a ``signature``. CIDEr-D's
document frequencies (and BERTScore's idf) come from the references of the whole call.

>>> from mmjudge.metrics.baselines import Baselines
>>> cider = Baselines("cider")
>>> out = cider.compute(predictions=["A dog runs on the beach.", "Two cats sleep."],
...                     references=[["A dog is running on the beach!", "A dog on the sand."], ["Two cats sleeping."]])
>>> [round(x, 4) for x in out["cider"]], round(out["corpus_cider"], 4), cider.primary
([3.3535, 2.9167], 3.1351, 'cider')
>>> out["signature"]
'mmjudge=...|metric=baselines|config=cider|tokenizer=ptb-python@1|n=4|sigma=6'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge.metrics.base import Metric
from mmjudge.metrics.baselines import (
    bartscore,
    bertscore,
    bleu,
    cider,
    distinct,
    meteor,
    ngrams,
    rouge,
    spice,
    tokenize,
)
from mmjudge.metrics.spec import ChunkScores, InputSpec, Item, MetricSpec, OutputSpec

CONFIGS = ("bleu", "rouge_l", "meteor", "cider", "spice", "bertscore", "bartscore", "coco")
TOKENIZED = ("bleu", "rouge_l", "cider", "meteor", "spice", "coco")  # PTB-tokenised first, as in pycocoevalcap
_MODEL_OPTIONS = {
    "coco": {"meteor"},
    "spice": {"spice_dir", "corenlp_dir", "cache_dir", "memory", "java"},
    "bertscore": {
        "model",
        "num_layers",
        "idf",
        "rescale_with_baseline",
        "baseline_path",
        "baseline",
        "batch_size",
        "device",
        "revision",
        "max_length",
    },
    "bartscore": {"model", "batch_size", "device", "revision", "max_length", "direction", "reduction"},
}
TOKENIZER_ID = "ptb-python@1"
LABELS = {
    "bleu": "BLEU",
    "rouge_l": "ROUGE-L",
    "meteor": "METEOR",
    "cider": "CIDEr-D",
    "spice": "SPICE",
    "bertscore": "BERTScore",
    "bartscore": "BARTScore",
    "coco": "COCO caption metrics",
}

# The classic scorers name what they compare candidates and references, as pycocoevalcap does.
_CANDIDATES = InputSpec("predictions", "text", True, "text", "the candidate texts (captions)", noun="candidate")
_REFERENCES = InputSpec(
    "references",
    "references",
    True,
    "references",
    "a list of reference captions per prediction",
    noun="reference",
    missing="The baselines metrics need `references` (a list of reference captions per prediction).",
)
_CORPUS = ("corpus", "mean")  # pycocoevalcap's corpus figure, and the plain mean of the per-sample scores
_SCORES = {
    **{
        f"bleu_{n}": OutputSpec(
            f"bleu_{n}", "score", f"BLEU-{n} (PTB-tokenised, closest reference length)", True, (0.0, 1.0), _CORPUS
        )
        for n in range(1, 5)
    },
    "rouge_l": OutputSpec("rouge_l", "score", "ROUGE-L F (beta 1.2)", True, (0.0, 1.0), _CORPUS),
    "cider": OutputSpec("cider", "score", "CIDEr-D (idf from the call's references)", True, (0.0, 10.0), _CORPUS),
    "meteor": OutputSpec("meteor", "score", "METEOR 1.5", True, (0.0, 1.0), _CORPUS),
    "spice": OutputSpec("spice", "score", "SPICE 1.0: F-score of scene-graph tuples", True, (0.0, 1.0), _CORPUS),
    **{
        f"spice_{key}": OutputSpec(
            f"spice_{key}",
            "score",
            f"SPICE's F-score on {name} tuples (NaN when the references have none)",
            True,
            (0.0, 1.0),
            ("mean",),
        )
        for name, key in spice.CATEGORIES.items()
    },
    **{
        f"bertscore_{p}": OutputSpec(f"bertscore_{p}", "score", f"BERTScore {p}", True, aggregates=_CORPUS)
        for p in ("precision", "recall", "f1")
    },
    "bartscore": OutputSpec(
        "bartscore", "score", "BARTScore: mean token log-likelihood", True, (float("-inf"), 0.0), _CORPUS
    ),
}
# CIDEr-D's idf is log(N / df) over the N items scored together: with one item every n-gram has df = N and
# the score is 0 whatever the text. That is no score: it is NaN with this status instead.
NEEDS_CORPUS = "needs_corpus"
CIDER_ALONE = (
    "CIDEr-D needs a corpus: not computed for one item (its document frequencies come from the references "
    "of all the items scored together; score a test set in one call)"
)
_CIDER_STATUS = (
    OutputSpec("cider_status", "text", "ok, or needs_corpus: one item alone has no CIDEr-D", None, aggregates=()),
    OutputSpec("cider_note", "text", "why CIDEr-D was not computed", None, aggregates=()),
)
_CONFIG_OUTPUTS = {
    "bleu": (["bleu_1", "bleu_2", "bleu_3", "bleu_4"], "bleu_4"),
    "rouge_l": (["rouge_l"], "rouge_l"),
    "meteor": (["meteor"], "meteor"),
    "cider": (["cider"], "cider"),
    "spice": (["spice", *(f"spice_{key}" for key in spice.CATEGORIES.values())], "spice"),
    "bertscore": (["bertscore_precision", "bertscore_recall", "bertscore_f1"], "bertscore_f1"),
    "bartscore": (["bartscore"], "bartscore"),
    "coco": (["bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider", "meteor"], "cider"),
}


class Baselines(Metric):
    """BLEU-1..4, ROUGE-L, METEOR, CIDEr-D, BERTScore or BARTScore, chosen by ``config_name``.

    Args:
        config_name: which metric (see :data:`CONFIGS`).
        **options: for ``bertscore``: ``model`` (default roberta-large), ``num_layers`` (17), ``idf``,
            ``rescale_with_baseline``, ``baseline_path``, ``baseline``, ``batch_size``, ``device``,
            ``revision``, ``max_length``; for ``bartscore``: ``model`` (default facebook/bart-large-cnn),
            ``direction`` (``f``, ``precision``, ``recall``), ``reduction`` (``max``/``mean`` over
            references), ``batch_size``, ``device``, ``revision``, ``max_length``. Models load at the
            first ``compute`` and are kept.
    """

    name = "baselines"
    configs = CONFIGS
    # CIDEr-D's document frequencies and the corpus figures come from the whole input: one chunk.
    chunk_size = None

    def __init__(self, config_name: str | None = "bleu", **options: Any):
        config_name = self.check_config(config_name)
        allowed = _MODEL_OPTIONS.get(config_name, set())
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ValueError(
                f"Options {unknown} do not apply to the {config_name!r} configuration"
                + (f" (it takes {sorted(allowed)})." if allowed else " (it takes none).")
            )
        self.config_name = config_name
        self.options = options
        if config_name == "bartscore":
            from mmjudge.metrics.baselines.bartscore import DIRECTIONS, REDUCTIONS

            self.direction = options.pop("direction", "f")
            self.reduction = options.pop("reduction", "max")
            if self.direction not in DIRECTIONS:
                raise ValueError(
                    f"Expected argument `direction` to be one of {DIRECTIONS}, but got {self.direction!r}."
                )
            if self.reduction not in REDUCTIONS:
                raise ValueError(
                    f"Expected argument `reduction` to be one of {REDUCTIONS}, but got {self.reduction!r}."
                )
        self.with_meteor = bool(options.pop("meteor", False)) if config_name == "coco" else config_name == "meteor"
        self._scorer: Any = None
        if config_name == "spice":  # the jar, CoreNLP and Java are checked now, before any input is read
            self._scorer = spice.SpiceScorer(**options)

    # ------------------------------------------------------------------------------------------ model
    @property
    def scorer(self) -> Any:
        """The loaded model scorer (BERTScore/BARTScore) or the METEOR process; created once."""
        if self._scorer is None:
            if self.config_name == "bertscore":
                self._scorer = bertscore.BERTScorer(**self.options)
            elif self.config_name == "bartscore":
                self._scorer = bartscore.BARTScorer(**self.options)
            elif self.with_meteor:
                self._scorer = meteor.MeteorScorer()
        return self._scorer

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        config = cls.check_config(config_name)
        names, primary = _CONFIG_OUTPUTS[config]
        outputs = []
        for name in names:
            out = _SCORES[name]
            if config == "coco" and name == "meteor":  # only with meteor=True
                out = OutputSpec(out.name, out.kind, out.description, True, out.bounds, out.aggregates, optional=True)
            outputs.append(out)
        if "cider" in names:
            outputs += _CIDER_STATUS
        return MetricSpec(
            "baselines",
            config,
            (_CANDIDATES, _REFERENCES),
            tuple(outputs),
            primary,
            "classic reference-based caption metric(s)",
            label=LABELS[config],
        )

    def signature_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if self.config_name in TOKENIZED:
            fields["tokenizer"] = TOKENIZER_ID
        if self.config_name == "bleu":
            fields.update(n=4, reflen="closest")
        elif self.config_name == "rouge_l":
            fields["beta"] = 1.2
        elif self.config_name == "cider":
            fields.update(n=4, sigma=6)
        elif self.config_name == "meteor":
            fields.update(version="1.5", language="en", norm=True)
        elif self.config_name == "spice":
            fields.update(self.scorer.signature_fields)
        elif self.config_name == "coco":
            fields.update(metrics="bleu4,rouge_l,cider_d" + (",meteor1.5" if self.with_meteor else ""))
        elif self.config_name == "bertscore":
            fields.update(self.scorer.signature_fields)
        elif self.config_name == "bartscore":
            fields.update(self.scorer.signature_fields, direction=self.direction, reduction=self.reduction)
        return fields

    # ---------------------------------------------------------------------------------------- scoring
    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        texts = [it.text for it in items]
        references = [it.references for it in items]
        out: dict[str, Any] = {}
        config = self.config_name
        if config in TOKENIZED:
            self._score_tokenized(texts, references, out)
        elif config == "bertscore":
            scores = self.scorer.compute_score(texts, references, progress=progress)
            for part in ("precision", "recall", "f1"):
                self._put(out, f"bertscore_{part}", scores[part], float(np.mean(scores[part])))
        else:
            scores = self.scorer.compute_score(
                texts, references, direction=self.direction, reduction=self.reduction, progress=progress
            )
            self._put(out, "bartscore", scores, float(np.mean(scores)))
        if "cider" in out:
            alone = len(items) < 2
            if alone:
                out["cider"], out["corpus_cider"] = [math.nan] * len(items), math.nan
            out["cider_status"] = [NEEDS_CORPUS if alone else "ok"] * len(items)
            out["cider_note"] = [CIDER_ALONE if alone else ""] * len(items)
        values = {k: v for k, v in out.items() if not k.startswith("corpus_")}
        return ChunkScores(values, {k: v for k, v in out.items() if k.startswith("corpus_")})

    def _score_tokenized(self, texts: list[str], references: list[list[str]], out: dict[str, Any]) -> None:
        """BLEU, ROUGE-L, CIDEr-D, SPICE (each distinct item once, counted as often as it occurs) and METEOR
        (every row: its corpus figure is the jar's, over the rows) into ``out``."""
        config = self.config_name
        rows = distinct.distinct_items(texts, references)
        cands, refs = _tokenize(rows.candidates, rows.references)
        counts = ngrams.count_pair_ngrams(cands, refs) if config == "coco" else None  # shared by BLEU, CIDEr-D
        if config in ("bleu", "coco"):
            corpus, per_item = bleu.compute_bleu(cands, refs, counts=counts, multiplicity=rows.multiplicity)
            for k in range(4):
                self._put(out, f"bleu_{k + 1}", per_item[k][rows.index], corpus[k])
        if config in ("rouge_l", "coco"):
            per_item = rouge.compute_rouge_l(cands, refs)[1][rows.index]
            self._put(out, "rouge_l", per_item, np.mean(per_item))  # the mean over the rows, as pycocoevalcap's
        if config in ("cider", "coco"):
            per_item = cider.compute_cider_d(cands, refs, counts=counts, multiplicity=rows.multiplicity)[1]
            self._put(out, "cider", per_item[rows.index], np.mean(per_item[rows.index]))
        if self.with_meteor:
            corpus, per_item = self.scorer.compute_score([cands[i] for i in rows.index], [refs[i] for i in rows.index])
            self._put(out, "meteor", per_item, corpus)
        if config == "spice":  # an item's SPICE is its own (no corpus statistics): the jar sees each distinct item
            _, per_category = self.scorer.compute_score(cands, refs)  # once; pycocoevalcap's figure is the row mean
            per_item = per_category.pop("spice")[rows.index]
            self._put(out, "spice", per_item, np.mean(per_item))
            out.update({f"spice_{key}": [float(x) for x in values[rows.index]] for key, values in per_category.items()})

    @staticmethod
    def _put(out: dict, key: str, per_item: np.ndarray, corpus: float) -> None:
        """Per-item scores and pycocoevalcap's corpus figure; ``mean_<key>`` comes from :func:`add_means`."""
        out[key] = [float(x) for x in per_item]
        out[f"corpus_{key}"] = float(corpus)


def _tokenize(texts: Sequence[str], references: Sequence[Sequence[str]]) -> tuple[list[str], list[list[str]]]:
    """PTB-tokenise candidates and references in one pass, then regroup the references per item."""
    flat = tokenize.ptb_tokenize(list(texts) + [r for group in references for r in group])
    cands, rest = flat[: len(texts)], iter(flat[len(texts) :])
    return cands, [[next(rest) for _ in group] for group in references]
