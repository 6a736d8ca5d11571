"""CAPTURE (Dong et al. 2024, "Benchmarking and Improving Detail Image Caption"): a detailed caption against its
references, through the scene graphs a T5 parser reads from them.

Each text (candidate and every reference) is split into sentences, each sentence parsed into a scene graph,
the graphs merged into objects, attributes and relations (:mod:`.graphs`); the candidate's are matched with
each reference's in three stages — exact, WordNet synonyms, sentence-embedding similarity — and the three F1s
combined as (0.5·F1_obj + 0.5·F1_attr + 0.2·F1_rel) / 1.2 (:mod:`.matching`). An item's CAPTURE is the mean
over its references; the corpus figure is the mean over items (the package's ``compute_score``).

Native: the authors' ``capture-metric`` package installs CUDA torch, fetches NLTK data at import, and runs
only on CUDA GPUs; here the same computation runs on any device through ``transformers`` and NLTK, offline.
Its stop-word list is read from that package's file without importing it
(``pip install --no-deps capture-metric==0.1.13``), or given (``stop_words=[...]``), or off.

>>> CAPTURE.spec_for().primary, [o.name for o in CAPTURE.spec_for().outputs]
('capture', ['capture', 'object_f1', 'attribute_f1', 'relation_f1'])
"""

from __future__ import annotations

import ast
import importlib.util
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.errors import MissingDependencyError, check_bool
from mmjudge.metrics.base import Metric
from mmjudge.metrics.building import given_once
from mmjudge.metrics.capture.graphs import text_graph
from mmjudge.metrics.capture.matching import ALPHA, BETA, EPS, GAMMA, Graph, score_pair
from mmjudge.metrics.spec import PREDICTIONS, REFERENCES, ChunkScores, Item, MetricSpec, OutputSpec

STOP_WORDS_PACKAGE = "capture-metric==0.1.13"
_OUTPUTS = (
    OutputSpec("capture", "score", "CAPTURE: weighted F1 of objects, attributes, relations", True, (0.0, 1.0)),
    OutputSpec("object_f1", "score", "F1 of the objects (mean over references)", True, (0.0, 1.0)),
    OutputSpec("attribute_f1", "score", "F1 of the attributes (mean over references)", True, (0.0, 1.0)),
    OutputSpec("relation_f1", "score", "F1 of the relations (mean over references)", True, (0.0, 1.0)),
)


def package_stop_words() -> list[str]:
    """The stop-word list of the installed ``capture-metric`` package, read from its ``stop_words.py`` without
    importing the package (its ``__init__`` downloads NLTK data).

    Raises:
        MissingDependencyError: the package is not installed (one line with the pip command).
    """
    spec = importlib.util.find_spec("capture_metric")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "stop_words.py"
        if path.is_file():
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Assign) and any(
                    getattr(t, "id", "") == "stop_words_list" for t in node.targets
                ):
                    return [str(w) for w in ast.literal_eval(node.value)]
    raise MissingDependencyError(
        f"CAPTURE's stop words are the authors' list: pip install --no-deps {STOP_WORDS_PACKAGE} "
        "(only its word list is read), or pass stop_words=False or your own list."
    )


def _stop_words(option: Any) -> tuple[set[str], str]:
    """(the words, how the signature names them)."""
    if option is True:
        return set(package_stop_words()), STOP_WORDS_PACKAGE.replace("==", "@")
    if option is False or option is None:
        return set(), "none"
    if isinstance(option, (str, os.PathLike)):
        words = [w.strip() for w in Path(option).read_text(encoding="utf-8").splitlines() if w.strip()]
    elif isinstance(option, Sequence) and all(isinstance(w, str) for w in option):
        words = list(option)
    else:
        raise ValueError(
            f"Expected argument `stop_words` to be True, False, a list of words or a file, got {option!r}."
        )
    import hashlib

    return set(words), "custom-" + hashlib.sha256("\n".join(sorted(set(words))).encode()).hexdigest()[:12]


def _weight(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"Expected argument `{name}` to be a non-negative number, but got {value!r}.")
    return float(value)


class CAPTURE(Metric):
    """CAPTURE with the authors' parser, encoder and weights by default.

    Args:
        parser: the scene-graph parser (default ``lizhuang144/flan-t5-base-VG-factual-sg``): Hub id, folder,
            ``"tiny-random"`` or a callable returning ``(model, tokenizer)``; ``model`` is its CLI name.
        encoder: the sentence encoder of the soft stage (default ``sentence-transformers/all-mpnet-base-v2``).
        alpha, beta, gamma: the weights of the object, attribute and relation F1 (0.5, 0.5, 0.2; the package
            requires ``alpha + beta == 1``, which is kept).
        synonym_matching, soft_matching: the second and third matching stages (both on).
        stop_words: ``True`` (the authors' list, from ``capture-metric``), ``False``, a list or a file.
        eps: 1e-6, as published.
        nltk_data: a folder with NLTK's ``punkt_tab``, ``averaged_perceptron_tagger_eng``, ``wordnet``.
        device, dtype, revision: for both models (float32 by default, as the package runs them).
        batch_size: sentences per parser batch (32, as FactualSceneGraph; each text is parsed on its own).
    """

    name = "capture"
    configs = ("capture",)

    def __init__(
        self,
        config_name: str | None = None,
        parser: Any = None,
        encoder: Any = None,
        alpha: float = ALPHA,
        beta: float = BETA,
        gamma: float = GAMMA,
        synonym_matching: bool = True,
        soft_matching: bool = True,
        stop_words: Any = True,
        eps: float = EPS,
        nltk_data: str | os.PathLike | None = None,
        device: str | None = None,
        dtype: str | None = None,
        revision: str | None = None,
        batch_size: int = 32,
        model: Any = None,
    ):
        from mmjudge.metrics.capture.models import ENCODER, PARSER, SceneGraphParser, SentenceEncoder
        from mmjudge.metrics.capture.text import TextTools

        self.config_name = self.check_config(config_name)
        self.weights = (_weight(alpha, "alpha"), _weight(beta, "beta"), _weight(gamma, "gamma"))
        if abs(self.weights[0] + self.weights[1] - 1.0) > 1e-12:
            raise ValueError(f"Expected `alpha + beta` to be 1 (as CAPTURE defines it), but got {alpha} + {beta}.")
        self.eps = _weight(eps, "eps")
        self.synonym_matching = check_bool(synonym_matching, "synonym_matching")
        self.soft_matching = check_bool(soft_matching, "soft_matching")
        self.stop_words, self.stop_words_id = _stop_words(stop_words)
        self.text = TextTools(nltk_data)
        parser = given_once(parser, model, "parser", "the parser")
        self.parser = SceneGraphParser(
            parser or PARSER, batch_size=batch_size, device=device, dtype=dtype, revision=revision
        )
        self.encoder = (
            SentenceEncoder(encoder or ENCODER, device=device, dtype=dtype, revision=revision)
            if self.soft_matching
            else None
        )

    @classmethod
    def spec_for(cls, config_name: str | None = None) -> MetricSpec:
        cls.check_config(config_name)
        return MetricSpec(
            "capture",
            "capture",
            (PREDICTIONS, REFERENCES),
            _OUTPUTS,
            "capture",
            "scene-graph elements of a detailed caption matched with its references'",
            label="CAPTURE",
        )

    def signature_fields(self) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "parser": self.parser.identity.label(),
            **self.parser.settings(),
            "encoder": self.encoder.identity.label() if self.encoder else "none",
            "weights": ",".join(f"{w:g}" for w in self.weights),
            "synonyms": self.synonym_matching,
            "stop_words": self.stop_words_id,
            "eps": self.eps,
        }
        fields.update(self.text.identity())
        return fields

    # ---------------------------------------------------------------------------------------- scoring
    def graph(self, text: str) -> Graph:
        """One text's objects, attributes and relations (parsed sentence by sentence, filtered by its nouns)."""
        sentences = self.text.sentences(text)
        graphs = self.parser.parse(sentences) if sentences else []
        return text_graph(graphs, self.text.nouns(text), self.text.lemma, self.stop_words)

    def _score_chunk(self, items: list[Item], progress: bool = False) -> ChunkScores:
        from mmjudge.progress import optional_bar

        texts = list(dict.fromkeys([it.text for it in items] + [r for it in items for r in it.references or []]))
        graphs: dict[str, Graph] = {}
        with optional_bar(progress, total=len(texts), desc="CAPTURE: parsing", unit="text") as bar:
            for text in texts:
                graphs[text] = self.graph(text)
                if bar is not None:
                    bar.update(1)
        synonyms = self.text.synonyms if self.synonym_matching else None
        similarity = self.encoder.similarity if self.encoder is not None else None
        out: dict[str, list[float]] = {o.name: [] for o in _OUTPUTS}
        for it in items:
            pairs = [
                score_pair(graphs[it.text], graphs[ref], synonyms, similarity, self.weights, self.eps)
                for ref in it.references or []
            ]
            out["capture"].append(float(np.mean([p.capture for p in pairs])))
            for part in ("object", "attribute", "relation"):
                out[f"{part}_f1"].append(float(np.mean([getattr(p, part)[2] for p in pairs])))
        return ChunkScores(out)
