"""Polos's checkpoint read into our own modules: ``transformers``' RoBERTa, the layer mix, the feed-forward
head and a CLIP ViT-B/32 (:mod:`mmjudge.encoders.openai_clip`). No PyTorch Lightning, no pytorch-nlp.

The authors' ``reprod.ckpt`` (in ``reprod.zip``, beside ``hparams.yaml``) is a Lightning checkpoint: a
dict with ``state_dict`` (``encoder.model.*`` = SimCSE-RoBERTa, ``scalar_mix.*``, ``ff.0.ff.linear_*``,
``clip.*`` = OpenAI CLIP ViT-B/32) and ``hyper_parameters``. It is read with
:func:`~mmjudge.encoders.checkpoint_files.read_torch_file` (Lightning's classes become inert stand-ins);
``hparams.yaml`` beside it wins, as the authors' ``load_checkpoint`` passes it to the model.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.metrics.polos.head import pair_features, scalar_mix_cls

CHECKPOINT_URL = "https://polos-polaris.s3.ap-northeast-1.amazonaws.com/reprod.zip (unzip: reprod/reprod.ckpt)"
DEFAULT_TEXT_MODEL = "princeton-nlp/sup-simcse-roberta-base"
PREFIX = "A photo depicts "
_ENCODER = "encoder.model."
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")
_HEAD_ROWS = 4096  # (candidate, reference) pairs per head evaluation


def _activation(name: str) -> Any:
    import torch

    known = {"Tanh", "Sigmoid", "ReLU", "GELU", "LeakyReLU", "ELU", "SELU", "Softplus", "SiLU"}
    if name == "Swish":  # Polos's own x * sigmoid(x)
        return torch.nn.SiLU()
    if name not in known:
        raise ValueError(f"The Polos checkpoint asks for activation {name!r}; mmjudge knows {sorted(known)} and Swish.")
    return getattr(torch.nn, name)()


@dataclass
class PolosCheckpoint:
    """A Polos checkpoint's tensors (``state``: the Lightning ``state_dict``) and hyper-parameters."""

    state: dict[str, Any]
    hparams: dict[str, Any]


def _yaml_fields(path: Path) -> dict[str, Any]:
    import yaml

    # A SafeLoader (builds only plain YAML types), not yaml.Loader: Lightning may tag values with Python types
    # (!!python/object:…), and those tags are read below as the plain mapping, list or text they hold —
    # no class named in the file is imported or called.
    class Loader(yaml.SafeLoader):
        pass

    def plain(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", plain)
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
    return dict(data) if isinstance(data, dict) else {}


def read_polos_checkpoint(path: str | os.PathLike) -> PolosCheckpoint:
    """The authors' ``reprod.ckpt`` (see the module's description).

    Raises:
        FileNotFoundError: no such file (the message says where to download it).
        ValueError: not a PyTorch checkpoint, or not a Polos one.
    """
    from mmjudge.encoders.checkpoint_files import plain_fields, read_torch_file, require_file

    file = require_file(path, "Polos checkpoint", CHECKPOINT_URL)
    raw = read_torch_file(file)
    state = raw.get("state_dict") if isinstance(raw, dict) else None
    if not isinstance(state, dict) or f"{_ENCODER}embeddings.word_embeddings.weight" not in state:
        raise ValueError(f"{str(file)!r} is not a Polos checkpoint (no SimCSE encoder weights in its state_dict).")
    if "ff.0.ff.linear_1.weight" not in state:
        raise ValueError(f"{str(file)!r} is not a Polos checkpoint (no feed-forward head ff.0.ff.*).")
    hparams = plain_fields(raw.get("hyper_parameters"))
    if "hparams" in hparams and plain_fields(hparams["hparams"]):  # Lightning 1.x may nest them
        hparams = {**hparams, **plain_fields(hparams.pop("hparams"))}
    beside = file.parent / "hparams.yaml"
    if beside.is_file():
        hparams.update(_yaml_fields(beside))
    return PolosCheckpoint(state, hparams)


def roberta_from_state(state: dict[str, Any], pad_token_id: int, config: Any = None) -> Any:
    """``transformers``' ``RobertaModel`` with the checkpoint's ``encoder.model.*`` weights; its sizes read
    from their shapes. ``config``: the encoder's own ``config.json`` (beside its tokenizer), for what the
    shapes do not say (heads, ``layer_norm_eps``); without it, RoBERTa-base/large's: heads = width / 64,
    ``layer_norm_eps`` 1e-5."""
    from transformers import RobertaConfig, RobertaModel

    own = {k[len(_ENCODER) :]: v.float() for k, v in state.items() if k.startswith(_ENCODER)}
    own = {k: v for k, v in own.items() if not k.endswith(_BUFFERS)}
    vocab, hidden = own["embeddings.word_embeddings.weight"].shape
    layers = len({k.split(".")[2] for k in own if k.startswith("encoder.layer.")})
    config = RobertaConfig(
        vocab_size=int(vocab),
        hidden_size=int(hidden),
        num_hidden_layers=layers,
        num_attention_heads=int(getattr(config, "num_attention_heads", 0) or max(1, int(hidden) // 64)),
        intermediate_size=int(own["encoder.layer.0.intermediate.dense.weight"].shape[0]),
        max_position_embeddings=int(own["embeddings.position_embeddings.weight"].shape[0]),
        type_vocab_size=int(own["embeddings.token_type_embeddings.weight"].shape[0]),
        layer_norm_eps=float(getattr(config, "layer_norm_eps", 1e-5)),
        hidden_act=str(getattr(config, "hidden_act", "gelu")),
        pad_token_id=int(pad_token_id),
    )
    from accelerate import init_empty_weights

    with init_empty_weights(include_buffers=False):  # the weights come from the checkpoint: no random init
        model = RobertaModel(config, add_pooling_layer="pooler.dense.weight" in own)
    result = model.load_state_dict(own, strict=False, assign=True)
    missing = [k for k in result.missing_keys if not k.endswith(_BUFFERS)]
    if missing or result.unexpected_keys:
        raise ValueError(
            f"Polos's encoder weights do not fit RoBERTa: missing {missing}, unexpected {result.unexpected_keys}."
        )
    return model.eval()


def head_from_state(state: dict[str, Any], hparams: dict[str, Any]) -> Any:
    """The feed-forward head: ``ff.0.ff.linear_1 … linear_N`` with the checkpoint's activation between
    them, its ``final_activation`` (the authors' default ``Sigmoid`` when the hyper-parameters do not name
    one), then ``PolosEstimator``'s own sigmoid."""
    import torch

    count = len({k.split(".")[3] for k in state if k.startswith("ff.0.ff.linear_") and k.endswith(".weight")})
    layers: list[Any] = []
    for i in range(1, count + 1):
        weight, bias = state[f"ff.0.ff.linear_{i}.weight"].float(), state[f"ff.0.ff.linear_{i}.bias"].float()
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            linear.weight.copy_(weight)
            linear.bias.copy_(bias)
        layers.append(linear)
        if i < count:
            layers.append(_activation(str(hparams.get("activations", "Tanh"))))
    final = hparams.get("final_activation", "Sigmoid")
    if final and str(final).lower() not in ("false", "none", "0"):
        layers.append(_activation(str(final)))
    layers.append(torch.nn.Sigmoid())
    return torch.nn.Sequential(*layers).eval()


def whole_group_batches(groups: Sequence[int], size: int) -> list[list[int]]:
    """Positions batched so that no normalisation group is split (a group larger than ``size`` runs alone).

    >>> whole_group_batches([0, 1, 1, 2, 2, 2], 3)
    [[0, 1, 2], [3, 4, 5]]
    """
    members: dict[int, list[int]] = {}
    for position, group in enumerate(groups):
        members.setdefault(group, []).append(position)
    batches: list[list[int]] = [[]]
    for positions in members.values():
        if batches[-1] and len(batches[-1]) + len(positions) > size:
            batches.append([])
        batches[-1].extend(positions)
    return [b for b in batches if b]


class PolosModel:
    """Polos's scorer: SimCSE sentence embeddings, raw CLIP features and the head (see
    :mod:`mmjudge.metrics.polos.head`).

    Args:
        checkpoint: the authors' ``reprod.ckpt``.
        text_tokenizer: the RoBERTa tokenizer (folder or Hub id); default the checkpoint's
            ``pretrained_model`` (``princeton-nlp/sup-simcse-roberta-base``), from the Hugging Face cache.
        clip_tokenizer: OpenAI CLIP's BPE (:func:`~mmjudge.encoders.clip_tokenizer.clip_bpe_tokenizer`).
        clip_model: a ``transformers`` CLIP to use when the checkpoint holds no ``clip.*`` weights.
        device, dtype, batch_size, cache: as for CLIP-S; float32 by default, as the authors ran it.
    """

    def __init__(
        self,
        checkpoint: str | os.PathLike,
        text_tokenizer: Any = None,
        clip_tokenizer: Any = None,
        clip_model: Any = None,
        device: str | None = None,
        dtype: Any = None,
        batch_size: int = 64,
        cache: Any = None,
    ):
        import torch

        from mmjudge.encoders.checkpoint_files import checkpoint_fingerprint
        from mmjudge.models import resolve_device, resolve_dtype

        read = read_polos_checkpoint(checkpoint)
        self.hparams, self.fingerprint = read.hparams, checkpoint_fingerprint(checkpoint)
        layer, pool = str(read.hparams.get("layer", "mix")), str(read.hparams.get("pool", "cls"))
        if layer != "mix" or pool != "cls":
            raise ValueError(
                f"This Polos checkpoint uses layer={layer!r}, pool={pool!r}; mmjudge reads layer=mix, pool=cls."
            )
        self.device = resolve_device(device)
        self.dtype = getattr(torch, resolve_dtype(dtype, self.device, gpu_default="float32"))
        self.batch_size = int(batch_size)
        self.tokenizer, self.text_tokenizer_id, config = self._text_tokenizer(text_tokenizer, read.hparams)
        self.roberta = roberta_from_state(read.state, self.tokenizer.pad_token_id, config).to(self.device, self.dtype)
        count = len([k for k in read.state if k.startswith("scalar_mix.scalar_parameters.")])
        self.mix_weights = torch.cat([read.state[f"scalar_mix.scalar_parameters.{i}"].float() for i in range(count)])
        self.gamma = read.state["scalar_mix.gamma"].float()
        if count != self.roberta.config.num_hidden_layers + 1:
            raise ValueError(
                f"The layer mix has {count} weights for {self.roberta.config.num_hidden_layers + 1} layers."
            )
        self.head = head_from_state(read.state, read.hparams).to(self.device)
        self.clip = self._clip(read.state, clip_tokenizer, clip_model, batch_size, cache)
        expected = 4 * self.roberta.config.hidden_size + 6 * int(self.clip.model.config.projection_dim)
        if self.head[0].in_features != expected:
            raise ValueError(f"The head reads {self.head[0].in_features} features, but Polos's are {expected}.")

    @staticmethod
    def _text_tokenizer(source: Any, hparams: dict) -> tuple[Any, str, Any]:
        """The RoBERTa tokenizer, its fingerprint, and the encoder's config when it lies beside it."""
        from transformers import AutoConfig, AutoTokenizer

        if source is not None and not isinstance(source, (str, os.PathLike)):
            return source, "object", None
        name = str(source or hparams.get("pretrained_model") or DEFAULT_TEXT_MODEL)
        try:
            tok = AutoTokenizer.from_pretrained(name)
        except OSError:
            raise OSError(
                f"Polos needs the RoBERTa tokenizer of {name!r} (not in the Hugging Face cache, and offline?): run "
                f"`huggingface-cli download {name}` once, or pass `text_tokenizer=` a folder holding it."
            ) from None
        from mmjudge.encoders.clip_tokenizer import CleanedTokenizer

        try:
            config = AutoConfig.from_pretrained(name)
        except (OSError, ValueError):  # a tokenizer-only folder: RoBERTa's defaults
            config = None
        return tok, CleanedTokenizer(tok, name).fingerprint(), config

    def _clip(self, state: dict, clip_tokenizer: Any, clip_model: Any, batch_size: int, cache: Any) -> Any:
        from mmjudge.encoders.openai_clip import BACKBONES, encoder_from_state

        own = {k[len("clip.") :]: v for k, v in state.items() if k.startswith("clip.")}
        if own:
            return encoder_from_state(
                own,
                BACKBONES["ViT-B/32"],
                self.fingerprint,
                clip_tokenizer,
                device=self.device,
                dtype=self.dtype,
                batch_size=batch_size,
                cache=cache,
                normalize=False,
                name="polos-clip",
            )
        from mmjudge.encoders.clip import ClipEncoder
        from mmjudge.encoders.clip_tokenizer import CleanedTokenizer

        encoder = ClipEncoder(
            clip_model or "openai/clip-vit-base-patch32",
            device=self.device,
            batch_size=batch_size,
            cache=cache,
            normalize=False,
        )
        encoder.tokenizer = CleanedTokenizer(encoder.tokenizer, "clip_model")
        return encoder

    # ------------------------------------------------------------------------------------ embeddings
    def text_embeddings(self, texts: Sequence[str], groups: Sequence[int]) -> Any:
        """SimCSE embeddings ``(n, H)`` (float32, CPU) of ``texts``; texts sharing a group id are
        layer-normalised together (see :func:`~mmjudge.metrics.polos.head.group_layer_norm_cls`)."""
        import torch

        limit = int(self.roberta.config.max_position_embeddings) - 2  # RoBERTa's positions start after padding
        out = torch.zeros(len(texts), self.roberta.config.hidden_size)
        long = 0
        for batch in whole_group_batches(list(groups), self.batch_size):
            enc = self.tokenizer(
                [texts[i] for i in batch], padding=True, truncation=True, max_length=limit, return_tensors="pt"
            )
            long += int(sum(len(ids) >= limit for ids in enc["input_ids"]))
            mask = enc["attention_mask"].to(self.device)
            ids = torch.tensor([groups[i] for i in batch])
            local = torch.unique(ids, return_inverse=True)[1].to(self.device)
            with torch.inference_mode():
                hidden = self.roberta(
                    input_ids=enc["input_ids"].to(self.device), attention_mask=mask, output_hidden_states=True
                ).hidden_states
                mixed = scalar_mix_cls(
                    [h.float() for h in hidden],
                    mask,
                    local,
                    self.mix_weights.to(self.device),
                    self.gamma.to(self.device),
                )
            out[batch] = mixed.float().cpu()
        if long:
            warnings.warn(f"{long} texts reach RoBERTa's {limit} tokens and are truncated.", stacklevel=2)
        return out

    def head_scores(self, features: Any) -> np.ndarray:
        """The head's sigmoid output per feature row."""
        import torch

        rows = []
        with torch.inference_mode():
            for start in range(0, len(features), _HEAD_ROWS):
                block = features[start : start + _HEAD_ROWS].to(self.device)
                rows.append(self.head(block).float().cpu()[:, 0])
        return torch.cat(rows).numpy().astype(np.float64)

    def score(self, pairs: list[tuple[int, int]], cand_text: Any, ref_text: Any, clip: dict[str, Any]) -> np.ndarray:
        """Head scores of (candidate i, reference k) pairs: ``cand_text`` / ``ref_text`` their SimCSE rows,
        ``clip`` the raw CLIP rows (``image``, ``cand`` per candidate, ``ref`` per reference)."""
        import torch

        ci = torch.tensor([i for i, _ in pairs])
        rk = torch.tensor([k for _, k in pairs])
        as_tensor = {key: torch.from_numpy(np.asarray(v, dtype=np.float32)) for key, v in clip.items()}
        features = pair_features(
            ref_text[rk], cand_text[ci], as_tensor["image"][ci], as_tensor["cand"][ci], as_tensor["ref"][rk]
        )
        return self.head_scores(features)
