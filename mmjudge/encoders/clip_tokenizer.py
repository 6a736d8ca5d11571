"""OpenAI CLIP's text tokenization, exactly: its text cleaning, and its BPE vocabulary from a file this
machine already has.

OpenAI's ``clip.tokenize`` (which PAC-S and Polos call) cleans a text before BPE: ``ftfy.fix_text``,
``html.unescape`` twice, whitespace runs to one space, strip, lowercase. ``transformers``' CLIP tokenizer
lowercases and collapses whitespace but neither fixes mojibake nor unescapes HTML, so ``"&amp;"`` would
tokenize differently. :class:`CleanedTokenizer` applies OpenAI's cleaning first; the BPE itself is the same
(``transformers``' pre-tokenizer regex and ``</w>`` word ends are OpenAI's).

Where the vocabulary comes from (:func:`clip_bpe_tokenizer`): a ``transformers`` tokenizer folder or Hub id
(e.g. ``openai/clip-vit-base-patch32``), or OpenAI's ``bpe_simple_vocab_16e6.txt.gz`` — by default the copy
that ``open-clip-torch`` installs, so nothing is downloaded.

>>> openai_clean("A  dog &amp;amp; a CAT\\n")
'A dog & a CAT'
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import html
import importlib.util
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BPE_FILE = "bpe_simple_vocab_16e6.txt.gz"
# OpenAI's vocabulary: 256 byte symbols, the same with end-of-word marks, 48,894 merges, 2 specials.
_MERGES = 49152 - 256 - 2
DEFAULT_HUB_TOKENIZER = "openai/clip-vit-base-patch32"


# Printable ASCII but "&", tabs and newlines: every repair of ftfy.fix_text needs some other character
# (mojibake, entities, terminal escapes, control characters, curly quotes, ligatures, widths, "\r" line
# breaks, NFC) and html.unescape needs "&", so such a text (most captions) comes out of both unchanged.
_UNTOUCHED = re.compile(r"[\t\n\x20-\x25\x27-\x7e]*")
# Texts repaired by ftfy (~30-100 µs each), remembered: references repeat across a data set's items.
_FIXED_TEXTS = 4096


def openai_clean(text: str) -> str:
    """OpenAI CLIP's ``basic_clean`` + ``whitespace_clean`` (lowercasing is left to the tokenizer):
    ``ftfy.fix_text`` when ftfy is installed, HTML entities unescaped twice, whitespace collapsed, stripped.

    A text of printable ASCII without ``&`` skips ftfy and the unescaping (they leave it as it is), and
    ``" ".join(text.split())`` collapses whitespace (``str.split`` and ``re``'s ``\\s`` split on the same
    characters: ``str.isspace``), so the result is OpenAI's, character for character, at a tenth of the cost.

    >>> openai_clean("caf\u00c3\u00a9 &lt;b&gt;\u3000 x")  # mojibake fixed, entities unescaped, ideographic space
    'café <b> x'
    """
    if _UNTOUCHED.fullmatch(text) is None:
        text = _repaired(text)
    return " ".join(text.split())


@functools.lru_cache(maxsize=_FIXED_TEXTS)
def _repaired(text: str) -> str:
    """``ftfy.fix_text`` (when installed), then HTML entities unescaped twice."""
    fix_text = _ftfy_fix_text()
    if fix_text is not None:
        text = fix_text(text)
    return html.unescape(html.unescape(text))


@functools.cache
def _ftfy_fix_text() -> Callable[[str], str] | None:
    """``ftfy.fix_text``, or ``None`` without ftfy (it only repairs mojibake; without it, clean texts tokenize
    the same). Looked up once: :func:`openai_clean` runs per text, and a failed import is not cached."""
    try:
        import ftfy
    except ImportError:
        return None
    return ftfy.fix_text


def installed_bpe_file() -> Path | None:
    """OpenAI's BPE vocabulary file shipped inside ``open-clip-torch``, when that package is installed."""
    spec = importlib.util.find_spec("open_clip")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / BPE_FILE
        if candidate.is_file():
            return candidate
    return None


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2/CLIP's reversible byte -> printable character table.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(keep, (chr(c) for c in chars)))


def tokenizer_from_bpe_file(path: str | os.PathLike, context_length: int = 77) -> Any:
    """A ``transformers`` ``CLIPTokenizer`` built from OpenAI's ``bpe_simple_vocab_16e6.txt.gz``, in the
    vocabulary order OpenAI's ``SimpleTokenizer`` gives it (ids 49406/49407 = start/end of text)."""
    from transformers import CLIPTokenizer

    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().split("\n")[1 : _MERGES + 1]
    merges = [tuple(line.split()) for line in lines]
    symbols = list(_bytes_to_unicode().values())
    vocab = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges]
    vocab += ["<|startoftext|>", "<|endoftext|>"]
    tok = CLIPTokenizer(vocab={v: i for i, v in enumerate(vocab)}, merges=merges)
    tok.model_max_length = context_length
    return tok


class CleanedTokenizer:
    """A tokenizer that cleans every text as OpenAI's CLIP does before tokenizing it; every other
    attribute is the wrapped tokenizer's."""

    def __init__(self, tokenizer: Any, source: str):
        self.tokenizer = tokenizer
        self.source = source

    def __call__(self, texts: str | Sequence[str], *args: Any, **kwargs: Any) -> Any:
        cleaned = openai_clean(texts) if isinstance(texts, str) else [openai_clean(t) for t in texts]
        return self.tokenizer(cleaned, *args, **kwargs)

    def __len__(self) -> int:
        return len(self.tokenizer)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)

    def fingerprint(self) -> str:
        """What determines the token ids: a hash of the vocabulary and merges (``tok-<16 hex>``)."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        blob = backend.to_str() if backend is not None else repr(sorted(self.tokenizer.get_vocab().items()))
        return "tok-" + hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def clip_bpe_tokenizer(source: Any = None, context_length: int = 77) -> CleanedTokenizer:
    """OpenAI CLIP's tokenizer with OpenAI's cleaning (:class:`CleanedTokenizer`).

    Args:
        source: ``None`` (OpenAI's vocabulary file installed by ``open-clip-torch``, else the Hub's
            ``openai/clip-vit-base-patch32`` tokenizer, cached or downloaded), a ``.txt.gz`` BPE file, a
            ``transformers`` tokenizer folder or Hub id, or a tokenizer object.
        context_length: the text tower's positions (77).

    Raises:
        FileNotFoundError / OSError: no vocabulary can be found (one line saying how to get one).
    """
    if source is not None and not isinstance(source, (str, os.PathLike)):
        return source if isinstance(source, CleanedTokenizer) else CleanedTokenizer(source, "object")
    if source is None:
        found = installed_bpe_file()
        if found is not None:
            return CleanedTokenizer(tokenizer_from_bpe_file(found, context_length), "openai-bpe")
        source = DEFAULT_HUB_TOKENIZER
    text = str(source)
    if text.endswith(".gz"):
        path = Path(text).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"CLIP BPE vocabulary {text!r} does not exist.")
        return CleanedTokenizer(tokenizer_from_bpe_file(path, context_length), "openai-bpe")
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(text)
    except OSError:
        raise OSError(
            f"No CLIP tokenizer at {text!r} (offline, or not a tokenizer folder): `pip install open-clip-torch` "
            f"(it ships OpenAI's {BPE_FILE}), or pass `clip_tokenizer=` a CLIP tokenizer folder or that file."
        ) from None
    tok.model_max_length = context_length
    return CleanedTokenizer(tok, text)
