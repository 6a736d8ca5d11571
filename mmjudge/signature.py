"""Reproducibility signatures: a flat dict of plain ``key=value`` fields, rendered ``k=v|k=v``.

Every metric result carries one (``result["signature"]``, a :class:`Signature`, which *is* a ``str``
so it prints, compares and serialises like the string it renders to). Fields name what determines the
numbers — package version, metric and configuration, judge backend, model and revision, dtype, prompt
set and version, decoding, γ — and never where anything lies on disk: a local model folder appears as
its content fingerprint (``local-…``), so two people with the same weights get the same signature.

Values are plain text; the three characters that structure a signature (``|``, ``=``, ``%``) are
percent-escaped inside values, so :func:`parse` always reads back exactly what was written.

>>> sig = Signature.make("harmonic_eval", judge="transformers:Qwen/Qwen2.5-VL-7B-Instruct", revision="abc",
...                      dtype="bfloat16", gamma=0.75)
>>> str(sig).split("|")[1:]
['metric=harmonic_eval', 'judge=transformers:Qwen/Qwen2.5-VL-7B-Instruct', 'revision=abc', 'dtype=bfloat16',
 'gamma=0.75']
>>> parse(str(sig))["gamma"], parse("mmjudge=0.1.0|metric=x|prefix='a%7Cb'")["prefix"]
('0.75', "'a|b'")
>>> comparable(sig, sig.with_fields(gamma=0.5))
False
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_KEY = re.compile(r"^[a-z][a-z0-9_.]*$")
_ESCAPES = (("%", "%25"), ("|", "%7C"), ("=", "%3D"))
# Fields that describe the software rather than the measurement: two results that differ only here
# were produced by the same metric settings and may be ranked together.
SOFTWARE_FIELDS = frozenset({"mmjudge", "torch", "transformers"})


def _escape(value: str) -> str:
    for raw, escaped in _ESCAPES:
        value = value.replace(raw, escaped)
    return value


def _unescape(value: str) -> str:
    for raw, escaped in reversed(_ESCAPES):
        value = value.replace(escaped, raw)
    return value


def format_value(value: Any) -> str:
    """The text of one field: numbers as ``repr`` of a float without trailing noise (``0.75``, ``1``),
    booleans lower-case, sequences comma-joined, ``None`` as ``none``.

    >>> format_value(0.75), format_value(2.0), format_value(True), format_value(["a", "b"]), format_value(None)
    ('0.75', '2', 'true', 'a,b', 'none')
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if value == value else "nan"
    if isinstance(value, (list, tuple)):
        return ",".join(format_value(v) for v in value)
    return str(value)


def render(fields: Mapping[str, Any]) -> str:
    """``k=v|k=v`` in the order of ``fields``.

    Raises:
        ValueError: a key that is not lower-case ``[a-z0-9_.]`` starting with a letter.
    """
    parts = []
    for key, value in fields.items():
        if not _KEY.match(key):
            raise ValueError(f"Expected signature keys to match {_KEY.pattern}, but got {key!r}.")
        parts.append(f"{key}={_escape(format_value(value))}")
    return "|".join(parts)


def parse(text: str) -> dict[str, str]:
    """The fields of a rendered signature, in order (values as strings).

    Raises:
        ValueError: a part without ``=`` (e.g. a signature written by mmjudge < 0.2, whose judge part
            held a bare dtype) or a repeated key.
    """
    fields: dict[str, str] = {}
    for part in str(text).split("|"):
        key, sep, value = part.partition("=")
        if not sep or not _KEY.match(key):
            raise ValueError(f"Not a signature field: {part!r} in {text!r} (expected key=value parts joined by '|').")
        if key in fields:
            raise ValueError(f"Signature field {key!r} appears twice in {text!r}.")
        fields[key] = _unescape(value)
    return fields


class Signature(str):
    """A rendered signature that also keeps its fields (``sig.fields``, ``sig["gamma"]``).

    Being a ``str`` it is written to JSON, CSV and tables as the rendered text; :func:`parse` turns
    such text back into the fields."""

    fields: dict[str, str]

    def __new__(cls, fields: Mapping[str, Any]) -> Signature:
        text = render(fields)
        obj = super().__new__(cls, text)
        obj.fields = parse(text) if text else {}
        return obj

    @classmethod
    def make(cls, metric: str, **fields: Any) -> Signature:
        """``mmjudge=<version>|metric=<metric>|…fields`` (fields whose value is ``None`` are left out)."""
        from mmjudge._version import __version__

        head: dict[str, Any] = {"mmjudge": __version__, "metric": metric}
        head.update({k: v for k, v in fields.items() if v is not None})
        return cls(head)

    @classmethod
    def from_string(cls, text: str) -> Signature:
        return cls(parse(text))

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return self.fields[key]
        return str.__getitem__(self, key)

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.fields.get(key, default)

    def items(self) -> Iterator[tuple[str, str]]:
        return iter(self.fields.items())

    def with_fields(self, **fields: Any) -> Signature:
        """A copy with some fields changed (``None`` removes a field). Not named ``replace``: a
        :class:`Signature` is a ``str``, whose ``replace(old, new)`` must keep working."""
        merged: dict[str, Any] = dict(self.fields)
        for key, value in fields.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return Signature(merged)

    def __reduce__(self):  # pickles (multiprocessing, gather_object) as its fields
        return (Signature, (self.fields,))


def comparable(a: str, b: str, ignore: frozenset = SOFTWARE_FIELDS) -> bool:
    """Whether two signatures describe the same measurement (equal fields, software versions aside)."""
    fa, fb = parse(a), parse(b)
    return {k: v for k, v in fa.items() if k not in ignore} == {k: v for k, v in fb.items() if k not in ignore}
