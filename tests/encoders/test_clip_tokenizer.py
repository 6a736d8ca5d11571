"""OpenAI CLIP's text cleaning (:func:`mmjudge.encoders.clip_tokenizer.openai_clean`, with its plain-ASCII fast
path) against OpenAI's own ``basic_clean`` + ``whitespace_clean`` and open_clip's, character for character."""

from __future__ import annotations

import html
import random
import re
import sys

import pytest

from mmjudge.encoders.clip_tokenizer import openai_clean

ftfy = pytest.importorskip("ftfy")

# Pieces that each trigger one of ftfy's repairs or the unescaping, and plain ones that trigger none.
PIECES = ["a", "Dog", " ", "  ", "\t", "\n", "\r\n", "\r", "&amp;", "&amp;amp;", "&lt;b&gt;", "&#39;", "& ", "&"]
PIECES += ["\x00", "\x07", "\x0b", "\x0c", "\x1b[31m", "\x7f", "caf\u00c3\u00a9", "\u201cquoted\u201d", "\ufb01ne"]
PIECES += ["\u3000", "\xa0", "\u2028", "\uff26\uff55\uff4c\uff4c", "e\u0301", "\u00e9", "\x85", "\u0080", "'s", "42."]


def openai_reference(text: str) -> str:
    """OpenAI CLIP's ``simple_tokenizer.py``: ``basic_clean`` then ``whitespace_clean``."""
    text = html.unescape(html.unescape(ftfy.fix_text(text))).strip()
    return re.sub(r"\s+", " ", text).strip()


def open_clip_reference(text: str) -> str:
    tokenizer = pytest.importorskip("open_clip.tokenizer")
    return tokenizer.whitespace_clean(tokenizer.basic_clean(text))


def test_cleaning_equals_openai_and_open_clip():
    rng = random.Random(0)
    texts = ["A photo depicts a dog on a red table. Two cats sit near it.", "", "   ", "a  b\tc\nd"]
    texts += ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    plain = 0
    for text in texts:
        ours = openai_clean(text)
        assert ours == openai_reference(text) == open_clip_reference(text), repr(text)
        plain += ours == " ".join(text.split())
    # both paths ran: texts ftfy or the unescaping changed, and texts only their whitespace changed
    assert 0 < plain < len(texts)


def test_every_whitespace_character_collapses_as_openai():
    # str.split() (the fast path) and re's \s (OpenAI) must split on the same characters
    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace() or re.fullmatch(r"\s", chr(c))]
    assert len(spaces) > 20
    for space in spaces:
        for text in (f"{space}a{space}{space}b c{space}", f"{space}a{space}{space}b &amp; c{space}"):
            assert openai_clean(text) == openai_reference(text), repr(space)
    # (ftfy removes some of them, e.g. the vertical tab, as control characters: ours too)
    assert openai_clean("a\x0bb \u3000c\xa0d") == openai_reference("a\x0bb \u3000c\xa0d") == "ab c d"
