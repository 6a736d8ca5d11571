"""A generated caption corpus for parity tests and benchmarks (no data set download needed).

Captions mix what real caption data holds: casing variants, sentence punctuation, commas, quotes,
brackets, contractions and possessives, hyphenated words, numbers, money and percentages, and common
abbreviations. Candidates reuse words of their references at random so that every n-gram order and the
length penalty of CIDEr-D get exercised. The same seed gives the same corpus.

>>> candidates, references = synthetic_captions(3, seed=0)
>>> len(candidates), [len(r) for r in references]
(3, [5, 5, 5])
"""

from __future__ import annotations

import random

_SUBJECTS = [
    "man",
    "woman",
    "dog",
    "cat",
    "child",
    "boy",
    "girl",
    "horse",
    "bird",
    "group of people",
    "train",
    "bus",
    "skateboarder",
    "surfer",
    "player",
    "chef",
    "giraffe",
    "elephant",
    "teddy bear",
    "pizza",
    "Mr. Smith",
    "Dr. Jones",
    "baby",
    "cow",
    "sheep",
    "zebra",
    "motorcycle",
    "plane",
    "bicycle",
    "kite",
]
_ADJECTIVES = [
    "black",
    "white",
    "black-and-white",
    "red",
    "small",
    "large",
    "young",
    "old",
    "happy",
    "well-dressed",
    "two-story",
    "brown",
    "fluffy",
    "wet",
    "yellow",
    "blue",
    "long-haired",
    "tiny",
    "big",
    "dark",
    "bright",
    "21-year-old",
    "three",
    "two",
    "several",
    "1,000",
    "3.5",
    "no",
]
_VERBS = [
    "is sitting on",
    "sits on",
    "stands next to",
    "is running across",
    "runs along",
    "is riding",
    "rides",
    "holds",
    "is holding",
    "looks at",
    "is eating",
    "plays with",
    "is playing in",
    "walks down",
    "is parked near",
    "is flying over",
    "isn't near",
    "doesn't touch",
    "can't reach",
    "won't leave",
    "cannot see",
    "is gonna jump over",
    "lies on",
    "is lying in",
    "waits by",
    "jumps over",
]
_OBJECTS = [
    "table",
    "bench",
    "street",
    "beach",
    "field",
    "couch",
    "bed",
    "grass",
    "water",
    "snow",
    "road",
    "sidewalk",
    "kitchen",
    "park",
    "building",
    "tree",
    "fence",
    "wall",
    "window",
    "car",
    "frisbee",
    "ball",
    "St. Louis arch",
    "U.S. flag",
    "café",
    "hot-dog stand",
    "T.V.",
    "no. 5 bus",
    "3:30 p.m. train",
]
_ENDINGS = [".", ".", ".", "", "", " .", "!", "?", "...", "!!", " !", '."', "?!", ". ", "  "]
_EXTRAS = [
    ", and {det} {adj} {obj}",
    " while {det} {subj} watches",
    " in the {obj}",
    " near {det} {obj}",
    " (on the left)",
    " [blurry]",
    ' with a "{adj}" sign',
    " with 'hello' written on it",
    " -- {det} {adj} {obj}",
    " - {det} {obj}",
    "; {det} {subj}'s {obj}",
    " at the {subj}s' {obj}",
    ": a {adj} {obj}",
    " for $5.50",
    " about 50% off",
    " & {det} {obj}",
    " with #1 on it",
    " at 10am",
    " in the '90s",
    " etc.",
    " e.g. {det} {obj}",
    " , {det} {obj}",
    " it's {adj}",
    " they're {adj}",
    " we'll see",
    " I'm sure",
    " you've got it",
    " I'd say",
    " -5 degrees",
    " rock 'n' roll style",
    " at 5 o'clock",
    " \u2014 a {adj} {obj}",
    " it\u2019s \u201c{adj}\u201d",
    " in S\u00e3o Paulo\u2026",
]
_DETERMINERS = ["a", "the", "A", "The", "an", "some", "this", "his", "her", "their"]


def _phrase(rng: random.Random, template: str) -> str:
    return template.format(
        det=rng.choice(_DETERMINERS[:2] + ["the", "a"]),
        adj=rng.choice(_ADJECTIVES),
        obj=rng.choice(_OBJECTS),
        subj=rng.choice(_SUBJECTS),
    )


def _caption(rng: random.Random) -> str:
    det = rng.choice(_DETERMINERS)
    words = [det, rng.choice(_ADJECTIVES), rng.choice(_SUBJECTS), rng.choice(_VERBS), rng.choice(["a", "the"])]
    if rng.random() < 0.6:
        words.append(rng.choice(_ADJECTIVES))
    words.append(rng.choice(_OBJECTS))
    text = " ".join(words)
    for _ in range(rng.choice([0, 0, 1, 1, 2])):
        text += _phrase(rng, rng.choice(_EXTRAS))
    text += rng.choice(_ENDINGS)
    casing = rng.random()
    if casing < 0.08:
        text = text.upper()
    elif casing < 0.14:
        text = text.lower()
    elif casing < 0.2:
        text = text.title()
    elif casing < 0.5:
        text = text[:1].upper() + text[1:]
    if rng.random() < 0.05:
        text = "  " + text.replace(" ", "  ", 1)
    return text


def _candidate(rng: random.Random, references: list[str]) -> str:
    """Half the time a fresh caption, otherwise a reference with words dropped, swapped or repeated."""
    if rng.random() < 0.5:
        return _caption(rng)
    words = rng.choice(references).split()
    roll = rng.random()
    if roll < 0.3 and len(words) > 3:
        del words[rng.randrange(len(words))]
    elif roll < 0.6 and len(words) > 3:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif roll < 0.8:
        words += words[: rng.randrange(1, 4)]
    return " ".join(words)


def synthetic_captions(n: int, refs_per_item: int = 5, seed: int = 0) -> tuple[list[str], list[list[str]]]:
    """``n`` candidate captions and, for each, ``refs_per_item`` reference captions (deterministic)."""
    rng = random.Random(seed)
    candidates, references = [], []
    for _ in range(n):
        refs = [_caption(rng) for _ in range(refs_per_item)]
        references.append(refs)
        candidates.append(_candidate(rng, refs))
    return candidates, references


def flickr8k_expert_shaped(
    images: int = 1000, pairs: int = 5664, judgments: int = 3, refs_per_image: int = 5, seed: int = 0
) -> tuple[list[str], list[list[str]]]:
    """A corpus shaped like Flickr8k-Expert's meta-evaluation: ``images`` images with ``refs_per_image``
    captions each; ``pairs`` (image, candidate) pairs whose candidate is one of the corpus's captions
    (mostly another image's), each repeated once per human judgment, with the image's captions as its
    references. The default is the real shape: 5,664 pairs x 3 judgments = 16,992 rows, 5,000 captions.

    >>> candidates, references = flickr8k_expert_shaped(images=4, pairs=6, judgments=3, seed=0)
    >>> len(candidates), len(references[0]), candidates[0] == candidates[1] == candidates[2]
    (18, 5, True)
    >>> big, refs = flickr8k_expert_shaped()
    >>> len(big), len({text for group in refs for text in group} | set(big))  # rows, distinct texts
    (16992, 4993)
    """
    rng = random.Random(seed)
    captions = [[_caption(rng) for _ in range(refs_per_image)] for _ in range(images)]
    candidates, references = [], []
    for _ in range(pairs):
        image = rng.randrange(images)
        source = image if rng.random() < 0.2 else rng.randrange(images)  # its own caption, or another image's
        candidate = rng.choice(captions[source])
        candidates += [candidate] * judgments
        references += [captions[image]] * judgments
    return candidates, references
