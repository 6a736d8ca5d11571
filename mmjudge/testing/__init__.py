"""Helpers for tests, doctests and benchmarks (not for scoring).

* the tiny random-weight models of :mod:`mmjudge.tiny_models`, re-exported (plumbing and speed only),
  including checkpoint files in the PAC-S, Polos and InfoMetIC authors' formats (``tiny_pac_s``, ``tiny_polos``,
  ``tiny_infometic``: its checkpoint and region features);
* :class:`ScriptedJudge`: a judge whose rating distributions are given, so a metric's exact output can
  be worked out by hand and asserted end to end;

What only the project's own tests and benchmarks use (FLEUR's published procedure taken literally, the
ranking simulation) lives in ``tests/helpers/``, not in the package.
"""

from __future__ import annotations

from mmjudge.testing.scripted import ScriptedJudge
from mmjudge.tiny_models import (
    VLM_FAMILIES,
    check_with_transformers,
    tiny_answering_llava,
    tiny_answering_vlm,
    tiny_clip,
    tiny_text_lm,
    tiny_vlm,
)
from mmjudge.tiny_models.checkpoints import tiny_pac_s, tiny_polos
from mmjudge.tiny_models.infometic import tiny_infometic

__all__ = [
    "ScriptedJudge",
    "VLM_FAMILIES",
    "check_with_transformers",
    "tiny_answering_llava",
    "tiny_answering_vlm",
    "tiny_clip",
    "tiny_infometic",
    "tiny_pac_s",
    "tiny_polos",
    "tiny_text_lm",
    "tiny_vlm",
]
