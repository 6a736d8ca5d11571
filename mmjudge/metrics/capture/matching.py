"""CAPTURE's matching and scoring (Dong et al. 2024), numbers in, numbers out: the formulas of the authors'
``capture_metric`` package (0.1.13, ``capture.py``: ``compute_synonyms_score``, ``compute_match``,
``compute_f_score``), written out here.

For one category (objects, attributes, relations), candidate elements ``C`` and reference elements ``R``:

1. **exact**: each candidate takes the first unmatched reference equal to it;
2. **synonym** (``synonyms`` given): each still unmatched candidate takes the first unmatched reference whose
   synonym score is > 0 — 1 when one string contains the other, else the IoU of their WordNet lemma-name sets
   (a relation needs all three parts to pass);
3. **soft** (``similarity`` given): over what is left, ``S`` = cosine matrix of their sentence embeddings;
   ``m_C = k + Σ_i max_j S_ij``, ``m_R = k + Σ_j max_i S_ij`` (``k``: stages 1–2's matches), else
   ``m_C = m_R = k``.

P = m_C / (|C| + ε), R = m_R / (|R| + ε), F1 = 2PR / (P + R + ε), and
CAPTURE = (α·F1_obj + β·F1_attr + γ·F1_rel) / (α + β + γ), α = β = 0.5, γ = 0.2, ε = 1e-6. Attributes are
matched as one flat list over all objects, not per object.

>>> synonyms = {"car": {"car", "auto"}, "automobile": {"auto", "automobile"}}.get
>>> match(["car", "red"], ["automobile", "red", "tree"], lambda w: synonyms(w, set()))
(2, 2.0, 2.0)
>>> [round(x, 4) for x in prf(2.0, 2.0, 2, 3)]
[1.0, 0.6667, 0.8]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

EPS = 1e-6
ALPHA, BETA, GAMMA = 0.5, 0.5, 0.2

Synonyms = Callable[[str], set]
Similarity = Callable[[list[str], list[str]], np.ndarray]


def synonym_score(a: str, b: str, synonyms: Synonyms, eps: float = EPS) -> float:
    """1 when one string contains the other; else the IoU of the WordNet lemma names of the two (words of a
    multi-word string joined with ``_``, as WordNet spells them).

    >>> synonym_score("red car", "car", lambda w: set())
    1
    >>> round(synonym_score("dog", "hound", {"dog": {"dog", "domestic_dog"}, "hound": {"hound", "dog"}}.get), 4)
    0.3333
    """
    if a in b or b in a:
        return 1
    first, second = synonyms("_".join(a.split())), synonyms("_".join(b.split()))
    return len(first & second) / (len(first | second) + eps)


def _greedy(
    cands: Sequence, refs: Sequence, same: Callable, taken_c: set[int], taken_r: set[int], skip_taken: bool
) -> int:
    """One greedy pass: each candidate (unmatched ones only when ``skip_taken``) takes the first unmatched
    reference ``same`` accepts."""
    found = 0
    for i, cand in enumerate(cands):
        if skip_taken and i in taken_c:
            continue
        for j, ref in enumerate(refs):
            if j not in taken_r and same(cand, ref):
                taken_c.add(i)
                taken_r.add(j)
                found += 1
                break
    return found


def match(
    cands: Sequence,
    refs: Sequence,
    synonyms: Synonyms | None = None,
    similarity: Similarity | None = None,
    eps: float = EPS,
    relations: bool = False,
) -> tuple[int, float, float]:
    """``(k, m_C, m_R)`` of one category: stages 1–3 above. ``relations``: elements are (subject, relation,
    object) triples; the synonym stage needs every part to pass, the soft stage embeds ``" ".join(triple)``."""
    taken_c: set[int] = set()
    taken_r: set[int] = set()
    k = _greedy(cands, refs, lambda c, r: c == r, taken_c, taken_r, skip_taken=False)
    if synonyms is not None:
        if relations:

            def same(c, r) -> bool:
                return len(c) == len(r) and all(synonym_score(x, y, synonyms, eps) > 0.0 for x, y in zip(c, r))
        else:

            def same(c, r) -> bool:
                return synonym_score(c, r, synonyms, eps) > 0.0

        k += _greedy(cands, refs, same, taken_c, taken_r, skip_taken=True)
    left_c = [c for i, c in enumerate(cands) if i not in taken_c]
    left_r = [r for j, r in enumerate(refs) if j not in taken_r]
    if similarity is None or not left_c or not left_r:
        return k, float(k), float(k)
    if relations:
        left_c, left_r = [" ".join(c) for c in left_c], [" ".join(r) for r in left_r]
    sim = similarity(left_c, left_r)
    return k, k + float(np.sum(np.max(sim, axis=1))), k + float(np.sum(np.max(sim, axis=0)))


def prf(cand_match: float, ref_match: float, n_cand: int, n_ref: int, eps: float = EPS) -> tuple[float, float, float]:
    """Precision, recall and F1 with CAPTURE's ε (0 elements give 0, not NaN)."""
    precision = cand_match / (n_cand + eps)
    recall = ref_match / (n_ref + eps)
    return precision, recall, 2 * precision * recall / (precision + recall + eps)


@dataclass(frozen=True)
class Graph:
    """A caption's parsed elements: objects, attributes (flattened over objects, repeats kept) and relations
    (subject, relation, object), in the order they were found."""

    objects: tuple[str, ...]
    attributes: tuple[str, ...]
    relations: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class PairScore:
    """CAPTURE of one candidate against one reference, with each category's P/R/F1."""

    capture: float
    object: tuple[float, float, float]
    attribute: tuple[float, float, float]
    relation: tuple[float, float, float]


def score_pair(
    cand: Graph,
    ref: Graph,
    synonyms: Synonyms | None = None,
    similarity: Similarity | None = None,
    weights: tuple[float, float, float] = (ALPHA, BETA, GAMMA),
    eps: float = EPS,
) -> PairScore:
    """CAPTURE of ``cand`` against ``ref`` (the package's ``compute_f_score``).

    >>> g = Graph(("dog", "ball"), ("red",), (("dog", "play with", "ball"),))
    >>> s = score_pair(g, Graph(("dog",), ("red", "small"), ()))
    >>> [round(x, 4) for x in (s.capture, s.object[2], s.attribute[2], s.relation[2])]
    [0.5556, 0.6667, 0.6667, 0.0]
    """
    parts = []
    for c, r in ((cand.objects, ref.objects), (cand.attributes, ref.attributes)):
        _, m_c, m_r = match(c, r, synonyms, similarity, eps)
        parts.append(prf(m_c, m_r, len(c), len(r), eps))
    _, m_c, m_r = match(cand.relations, ref.relations, synonyms, similarity, eps, relations=True)
    parts.append(prf(m_c, m_r, len(cand.relations), len(ref.relations), eps))
    alpha, beta, gamma = weights
    capture = (alpha * parts[0][2] + beta * parts[1][2] + gamma * parts[2][2]) / (alpha + beta + gamma)
    return PairScore(capture, *parts)
