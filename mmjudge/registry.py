"""Explicit, lazy name → object maps: one per kind of pluggable part (judge backends, metrics, data sets,
CLI commands).

Each kind keeps its map in its own package (``mmjudge.judges.JUDGES``, ``mmjudge.metrics.METRICS``,
``mmjudge.datasets.DATASETS``, ``mmjudge.commands.COMMANDS``) as ``name -> "module:attribute"``
strings: listing the names imports nothing, and an entry's module is imported the first time it is
asked for, so heavy dependencies stay lazy. Adding a backend, metric, data set or command is one new
file plus one line in its package's map; nothing is discovered by listing a folder, so a helper module
beside the plug-ins (``conversations``, ``_base``) can never be mistaken for one.

>>> kinds = Registry("colour", {"red": "colorsys:rgb_to_hls", "green": "colorsys:rgb_to_hsv"})
>>> kinds.names()
['green', 'red']
>>> kinds.get("red").__name__
'rgb_to_hls'
>>> kinds.get("rde")
Traceback (most recent call last):
ValueError: Unknown colour 'rde'. Did you mean 'red'? Available: green, red.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Mapping
from typing import Any


class Registry:
    """The parts of one ``kind``: ``entries`` maps each name to ``"package.module:attribute"``."""

    def __init__(self, kind: str, entries: Mapping[str, str]):
        for name, target in entries.items():
            if target.count(":") != 1:
                raise ValueError(f"{kind} {name!r}: expected 'module:attribute', but got {target!r}.")
        self.kind = kind
        self._entries = dict(entries)

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.key(name) in self._entries

    def key(self, name: str) -> str:
        """``name`` as registered (``-`` and ``_`` are the same)."""
        return str(name).replace("-", "_")

    def target(self, name: str) -> str:
        """``"module:attribute"`` of ``name``; an unknown name is a ``ValueError`` with a "Did you mean"."""
        key = self.key(name)
        if key not in self._entries:
            close = difflib.get_close_matches(key, list(self._entries), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"Unknown {self.kind} {name!r}.{hint} Available: {', '.join(self.names())}.")
        return self._entries[key]

    def module_name(self, name: str) -> str:
        return self.target(name).split(":")[0]

    def get(self, name: str) -> Any:
        """The registered object of ``name`` (its module imported now, once)."""
        module, attribute = self.target(name).split(":")
        return getattr(importlib.import_module(module), attribute)
