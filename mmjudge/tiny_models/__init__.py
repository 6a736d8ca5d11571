"""Tiny random-weight models that load through the normal ``from_pretrained`` path.

For tests, the offline ``tiny-random`` model (:mod:`mmjudge.models`), demos and benchmarks: no Hub
access is needed, every model is built from a config with a seeded random initialisation and a
byte-level BPE tokenizer trained here on a few sentences. Such a model proves plumbing and speed,
never quality.

>>> import tempfile
>>> from mmjudge.tiny_models import tiny_text_lm
>>> path = tiny_text_lm(tempfile.mkdtemp())
>>> from transformers import AutoModelForCausalLM
>>> AutoModelForCausalLM.from_pretrained(path).config.num_hidden_layers
2
"""

from __future__ import annotations

from mmjudge.tiny_models._tokenizers import PathLike
from mmjudge.tiny_models.capture import tiny_nltk_data, tiny_scene_graph_parser, tiny_sentence_encoder
from mmjudge.tiny_models.checks import TransformersCheck, check_with_transformers
from mmjudge.tiny_models.clip import tiny_clip
from mmjudge.tiny_models.text import tiny_text_lm
from mmjudge.tiny_models.vlms import VLM_FAMILIES, tiny_answering_llava, tiny_answering_vlm, tiny_vlm

__all__ = [
    "tiny_text_lm",
    "tiny_vlm",
    "tiny_clip",
    "tiny_scene_graph_parser",
    "tiny_sentence_encoder",
    "tiny_nltk_data",
    "tiny_answering_llava",
    "tiny_answering_vlm",
    "build",
    "FAMILIES",
    "VLM_FAMILIES",
    "check_with_transformers",
    "TransformersCheck",
]

FAMILIES = (*VLM_FAMILIES, "clip", "long_clip", "text_lm", "scene_graph_t5", "sentence_encoder")


def build(directory: PathLike, family: str, seed: int = 0) -> str:
    """Write the tiny model of ``family`` (:data:`FAMILIES`) to ``directory``; returns its path."""
    if family in VLM_FAMILIES:
        return tiny_vlm(directory, family, seed=seed)
    if family == "clip":
        return tiny_clip(directory, seed=seed)
    if family == "long_clip":
        return tiny_clip(directory, max_position_embeddings=248, seed=seed)
    if family == "text_lm":
        return tiny_text_lm(directory, seed=seed)
    if family == "scene_graph_t5":
        return tiny_scene_graph_parser(directory, seed=seed)
    if family == "sentence_encoder":
        return tiny_sentence_encoder(directory, seed=seed)
    raise ValueError(f"Unknown tiny model family {family!r}. Expected one of: {', '.join(FAMILIES)}.")
