"""PTB-style tokenisation as the captioning evaluation toolkit (pycocoevalcap) does it, in pure Python.

pycocoevalcap pipes every caption through Stanford CoreNLP 3.4.1's ``PTBTokenizer -preserveLines
-lowerCase`` (Java) and then drops the tokens ``'' ' `` ` -LRB- -RRB- -LCB- -RCB- . ? ! , : - -- ... ;``.
This module reproduces that output for caption-like English without Java: lower-casing, splitting of
punctuation, clitics (``is n't``, ``dog 's``, ``we 'll``), ``cannot`` → ``can not``, ``gonna`` →
``gon na``, abbreviations that keep their period (``mr.``, ``st.``, ``u.s.``, ``p.m.``, single letters),
numbers (``1,000``, ``3.5``, ``3:30``, ``-5``), ``$``/``%``/``#`` split off, hyphenated words kept whole.

Two quirks of the reference pipeline are kept on purpose, because papers' numbers include them:
brackets become ``-lrb-``/``-rrb-``/``-lsb-``/… and stay (the removal list is upper-case, the tokens are
lower-cased), and runs such as ``!!`` or ``?!`` stay as tokens.

Parity with the Java tokenizer is tested on a generated corpus of captions with realistic punctuation,
casing and contractions (``tests/metrics/test_baselines_parity.py``). Text far from captions (URLs, e-mail
addresses, emoticons, SGML) may tokenise differently.

>>> ptb_tokenize(["A man's dog isn't running (fast)!", "Mr. Smith's café, U.S.A. -- 3:30 p.m."])
["a man 's dog is n't running -lrb- fast -rrb-", "mr. smith 's café u.s.a. 3:30 p.m."]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: Tokens pycocoevalcap removes after tokenisation (compared with the lower-cased tokens, as it does).
PUNCTUATIONS = frozenset(
    ["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"]
)

# Words that keep their final period as part of the token in every context (measured on CoreNLP 3.4.1).
_ABBREVIATIONS = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "dr",
        "st",
        "jr",
        "sr",
        "inc",
        "co",
        "corp",
        "ltd",
        "ave",
        "blvd",
        "rd",
        "mt",
        "ft",
        "vs",
        "etc",
        "jan",
        "feb",
        "mar",
        "apr",
        "aug",
        "sept",
        "sep",
        "oct",
        "nov",
        "dec",
        "jun",
        "jul",
        "mon",
        "tue",
        "tues",
        "wed",
        "thu",
        "thurs",
        "fri",
        "prof",
        "gen",
        "col",
        "capt",
        "sgt",
        "rev",
        "gov",
        "sen",
        "rep",
        "lt",
        "bros",
        "dept",
        "est",
        "sq",
        "cf",
        "al",
        "pres",
        "messrs",
        "hon",
        "supt",
        "ph",
        "calif",
        "fla",
        "ind",
        "ariz",
        "colo",
        "conn",
        "mich",
        "minn",
        "penn",
        "wis",
        "nev",
        "ala",
        "kan",
        "ky",
        "md",
        "mo",
        "mont",
        "neb",
        "okla",
        "tenn",
        "va",
        "vt",
        "wyo",
        "bldg",
        "univ",
        "assn",
        "esq",
    ]
)
# Words that keep their period only before a number ("No. 5", "Fig. 3").
_NUMBER_ABBREVIATIONS = frozenset(["no", "art", "pp", "op", "fig", "ca"])
# Words CoreNLP splits in two.
_SPLIT_WORDS = {
    "cannot": ("can", "not"),
    "gonna": ("gon", "na"),
    "gotta": ("got", "ta"),
    "wanna": ("wan", "na"),
    "lemme": ("lem", "me"),
    "gimme": ("gim", "me"),
}
_BRACKETS = {"(": "-lrb-", ")": "-rrb-", "[": "-lsb-", "]": "-rsb-", "{": "-lcb-", "}": "-rcb-"}
_UNICODE = str.maketrans(
    {"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": " - ", "\u2013": " - ", "\u2026": "..."}
)

_WORD = re.compile(r"\w+(?:(?:[-/.]|(?<=\d)[,:](?=\d))\w+)*")
_SIGNED_NUMBER = re.compile(r"[-+]\d+(?:[.,:/]\d+)*")
_CLITIC = re.compile(r"'(?:s|re|ll|ve|d|m)(?!\w)")
_APOSTROPHE_WORD = re.compile(r"'(?:n'(?!\w)|\d\ds(?!\w)|em(?!\w))")
_ACRONYM = re.compile(r"[^\W\d_]+(?:\.[^\W\d_])+")
_BANG = re.compile(r"[!?]+")
_PLAIN = re.compile(r"\w+")


def ptb_tokenize(texts: Sequence[str]) -> list[str]:
    """Tokenise and lower-case each text like pycocoevalcap's ``PTBTokenizer`` and drop its punctuation list.

    Returns one space-joined token string per text (the form every scorer here takes). Each distinct text
    is tokenised once: in a meta-evaluation the same references come back for every candidate of an image
    and every judgment of a pair, and the candidates are captions found among the references (Flickr8k-Expert:
    101,952 texts, 4,993 distinct).

    >>> ptb_tokenize(["Two dogs' toys... \\"Look\\", he said; it's 12.5% off $5!"])
    ["two dogs toys look he said it 's 12.5 % off $ 5"]
    """
    from mmjudge.metrics.baselines.ngrams import paused_gc

    with paused_gc():
        tokenized = {text: tokenize_line(text) for text in dict.fromkeys(texts)}
        return [tokenized[text] for text in texts]


def tokenize_line(text: str) -> str:
    """One text → its space-joined tokens (see :func:`ptb_tokenize`)."""
    chunks = text.translate(_UNICODE).lower().split()
    tokens: list[str] = []
    for i, chunk in enumerate(chunks):
        if _PLAIN.fullmatch(chunk) and chunk not in _SPLIT_WORDS:
            tokens.append(chunk)  # the common case: a plain word
            continue
        next_is_number = i + 1 < len(chunks) and chunks[i + 1][:1].isdigit()
        _tokenize_chunk(chunk, next_is_number, tokens)
    return " ".join(t for t in tokens if t not in PUNCTUATIONS)


def _tokenize_chunk(chunk: str, next_is_number: bool, out: list[str]) -> None:
    """Tokens of one whitespace-free chunk, appended to ``out`` (punctuation included; removed later)."""
    pos, end = 0, len(chunk)
    while pos < end:
        char = chunk[pos]
        if char == "'":
            match = _APOSTROPHE_WORD.match(chunk, pos) or _CLITIC.match(chunk, pos)
            if match:
                out.append(match.group())
                pos = match.end()
            elif (
                chunk.startswith(("'tis", "'twas"), pos)
                and not chunk[pos + 4 + chunk.startswith("'twas", pos) :][:1].isalnum()
            ):
                out.append("'t")
                pos += 2
            else:
                pos += 1  # a lone quote: removed anyway
            continue
        if char in _BRACKETS:
            out.append(_BRACKETS[char])
            pos += 1
            continue
        if char in "!?":
            match = _BANG.match(chunk, pos)
            out.append(match.group())
            pos = match.end()
            continue
        if char in "-+" and (pos == 0 or not chunk[pos - 1].isalnum()):
            match = _SIGNED_NUMBER.match(chunk, pos)
            if match:
                out.append(match.group())
                pos = match.end()
                continue
        match = _WORD.match(chunk, pos)
        if match is None or match.start() != pos:
            # punctuation and symbols: one character each; the removal list drops the punctuation
            if char not in '"`.,;:-':
                out.append(char)
            pos += 1
            continue
        word, pos = match.group(), match.end()
        pos = _emit_word(chunk, word, pos, next_is_number, out)


def _emit_word(chunk: str, word: str, pos: int, next_is_number: bool, out: list[str]) -> int:
    """Append ``word`` (split into clitics where CoreNLP splits it); returns the position after it."""
    rest = chunk[pos:]
    if rest.startswith("'t") and word.endswith("n") and not rest[2:3].isalnum() and len(word) > 1:
        out += [word[:-1], "n't"]
        return pos + 2
    if rest.startswith("'") and rest[1:2].isalpha() and not _CLITIC.match(rest):
        if word == "y":  # y'all → y' all
            out.append("y'")
            return pos + 1
        match = _WORD.match(chunk, pos + 1)  # o'clock, d'angelo: one token
        out.append(word + "'" + match.group())
        return match.end()
    if rest.startswith(".") and not rest[1:2].isalnum():
        at_end = len(rest) == 1
        if (
            word in _ABBREVIATIONS
            or (len(word) == 1 and word.isalpha())
            or _ACRONYM.fullmatch(word)
            or (word in _NUMBER_ABBREVIATIONS and at_end and next_is_number)
        ):
            out.append(word + ".")
            return pos + 1
    out.extend(_SPLIT_WORDS.get(word, (word,)))
    return pos
