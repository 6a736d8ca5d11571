"""From the scene-graph parser's text to CAPTURE's elements, as the authors' packages do it (FactualSceneGraph
0.7.3's ``clean_graph_string`` / ``graph_string_to_object``, capture-metric 0.1.13's
``merge_sentence_results`` and its noun filter), written out here.

The parser writes facts ``( subject , relation , object )``; ``( e , is , red )`` is an attribute (a number
is a quantity, not kept), any other relation links two entities, and a lone ``( e )`` is an entity.
Each text's sentences are parsed apart and merged: objects are entity heads lemmatised as nouns; attributes
lemmatised as adjectives (those containing ``" of"`` dropped); relations are (subject lemma, relation as
written, object lemma). An object is kept when it is not a stop word and it (or each of its words) is a noun of
the text (NLTK's ``NN*`` tags, lemmatised); attributes and relations are kept by the same noun test on their
object / subject and object, without the stop-word test (as the package does).

Where the package iterates Python sets (whose order changes from one interpreter to the next), elements keep
the order they were found in here, so a score never depends on ``PYTHONHASHSEED``.

>>> graph_text("Generate Scene Graph: ( dog , is , brown ) , ( dog , on , grass ),( dog , is , brown )")
'( dog , is , brown ) , ( dog , on , grass )'
>>> graph_facts("( dog , is , brown ) , ( dog , on , grass ) , ( dog , is , 2 )")
([('dog', ['brown']), ('grass', [])], [(0, 'on', 1)])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from mmjudge.metrics.capture.matching import Graph

Lemma = Callable[[str, str], str]  # (word, "n" | "a") -> lemma


def space_out(text: str) -> str:
    """Spaces around ``(``, ``)`` and ``,``; runs of whitespace become one space."""
    spaced = text.replace("(", " ( ").replace(")", " ) ").replace(",", " , ")
    return " ".join(spaced.split())


def clean_graph(text: str) -> str:
    """Unique facts in sorted order; a fact cut off by the output length is dropped (or, alone, reduced to its
    first field)."""
    facts = text.strip().split(") ,")
    if not text.endswith(")"):
        facts = facts[:-1] if len(facts) > 1 else [facts[0].split(",")[0]]
    unique = {fact.strip().strip("()").strip() for fact in facts}
    return " , ".join(f"( {fact} )" for fact in sorted(f for f in unique if f))


def graph_text(generated: str) -> str:
    """The parser's decoded output as FactualSceneGraph formats it."""
    return clean_graph(space_out(generated.replace("Generate Scene Graph:", "").strip()))


def graph_facts(text: str) -> tuple[list[tuple[str, list[str]]], list[tuple[int, str, int]]]:
    """``(entities, relations)`` of one graph text: entities as ``(head, attributes)`` in order of appearance,
    relations as ``(subject index, relation, object index)``."""
    heads: dict[str, int] = {}
    entities: list[tuple[str, list[str]]] = []
    relations: list[tuple[int, str, int]] = []

    def entity(name: str) -> int:
        if name not in heads:
            heads[name] = len(entities)
            entities.append((name, []))
        return heads[name]

    facts = text.strip().split(") ,")
    for fact in facts:
        parts = [part.strip() for part in fact.strip().strip("()").split(",")]
        if len(parts) != 3:
            if len(facts) == 1:
                entity(parts[0])
            continue
        subject, relation, obj = parts
        index = entity(subject)
        if relation == "is":
            if not obj.isdigit() and obj not in entities[index][1]:  # a set in the package: each once
                entities[index][1].append(obj)
        else:
            relations.append((index, relation, entity(obj)))
    return entities, relations


def merge(graphs: Iterable[str], lemma: Lemma) -> tuple[dict, dict, dict]:
    """The sentences' graphs of one text merged: ``(objects, attributes by object, relations)``, each an
    insertion-ordered dict used as a set."""
    objects: dict[str, None] = {}
    attributes: dict[str, dict[str, None]] = {}
    relations: dict[tuple[str, str, str], None] = {}
    for text in graphs:
        entities, links = graph_facts(text)
        for head, attrs in entities:
            obj = lemma(head, "n")
            objects[obj] = None
            for attribute in attrs:
                attribute = lemma(attribute, "a")
                if " of" not in attribute:
                    attributes.setdefault(obj, {})[attribute] = None
        for subject, relation, obj in links:
            relations[(lemma(entities[subject][0], "n"), relation, lemma(entities[obj][0], "n"))] = None
    return objects, attributes, relations


def _is_noun(name: str, nouns: set[str]) -> bool:
    return name in nouns or all(piece in nouns for piece in name.split(" "))


def text_graph(graphs: Sequence[str], nouns: set[str], lemma: Lemma, stop_words: set[str]) -> Graph:
    """One text's :class:`~mmjudge.metrics.capture.matching.Graph`: its sentences' graphs merged and filtered
    by the text's nouns (and, for objects, the stop words)."""
    objects, attributes, relations = merge(graphs, lemma)
    kept = tuple(o for o in objects if o not in stop_words and _is_noun(o, nouns))
    flat = tuple(a for obj, attrs in attributes.items() if _is_noun(obj, nouns) for a in attrs)
    links = tuple(r for r in relations if _is_noun(r[0], nouns) and _is_noun(r[2], nouns))
    return Graph(kept, flat, links)
