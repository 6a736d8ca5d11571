"""A LoRA adapter on a local judge: read from a folder or the Hub, matched to the loaded model's modules,
applied through ``peft`` and merged into the weights (as LLaVA's ``load_pretrained_model`` does:
``PeftModel.from_pretrained`` then ``merge_and_unload``).

Two layouts of the same adapter are read:

* ``peft``'s own, saved from the model as ``transformers`` loads it (keys name its modules);
* LLaVA's, saved by the LLaVA repository's trainer from *its* model class (EXPERT's
  ``hjkim811/EXPERT-llava-13b-lora``): the language model's layers are ``model.layers.N.…`` and the projector
  ``model.mm_projector.{0,2}``, which a ``llava-hf`` model holds as ``<its decoder>.layers.N.…`` and
  ``multi_modal_projector.linear_{1,2}``. LLaVA also stores the retrained projector beside the adapter
  (``non_lora_trainables.bin``), which is loaded over the model's.

A LoRA module or a stored weight that matches no module of the loaded model is one clear error, never
silently dropped (``peft`` itself would skip a key it cannot place).

>>> llava_module_name("model.layers.3.self_attn.q_proj", "model.language_model", "model.multi_modal_projector")
'model.language_model.layers.3.self_attn.q_proj'
>>> llava_module_name("model.mm_projector.2", "model.language_model", "model.multi_modal_projector")
'model.multi_modal_projector.linear_2'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ADAPTER_CONFIG = "adapter_config.json"
WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
EXTRA_WEIGHTS = "non_lora_trainables.bin"  # LLaVA's retrained projector, saved beside its LoRA adapter
_LORA_KEY = re.compile(r"^(?P<module>.+?)\.(?P<part>lora_(?:A|B|embedding_A|embedding_B|magnitude_vector)(?:\..+)?)$")
_PROJECTOR = {"0": "linear_1", "2": "linear_2"}  # LLaVA's nn.Sequential(Linear, GELU, Linear)


@dataclass(frozen=True)
class AdapterSource:
    """Where an adapter's files are on this machine, and its identity (a Hub id and commit, or a local
    folder's content fingerprint: never its path)."""

    folder: Path
    identity: str


def resolve_adapter(source: str, revision: str | None = None) -> AdapterSource:
    """The adapter folder for ``source``: a local folder, or a Hub repository downloaded (its adapter files
    only) into the Hugging Face cache.

    Raises:
        FileNotFoundError: a folder without ``adapter_config.json``, or a Hub id that cannot be fetched.
    """
    from mmjudge.models import hub_offline, local_fingerprint

    local = Path(str(source)).expanduser()
    if local.exists():
        if not (local / ADAPTER_CONFIG).is_file():
            raise FileNotFoundError(f"The adapter folder {str(local)!r} has no {ADAPTER_CONFIG} (a peft LoRA adapter).")
        return AdapterSource(local, f"local@{local_fingerprint(local)}")
    from huggingface_hub import snapshot_download

    try:
        folder = Path(
            snapshot_download(
                str(source), revision=revision, allow_patterns=[ADAPTER_CONFIG, *WEIGHT_FILES, EXTRA_WEIGHTS]
            )
        )
    except Exception as err:  # offline, no such repository, no network: one line either way
        why = "offline mode is on" if hub_offline() else " ".join(str(err).split())[:200]
        raise FileNotFoundError(
            f"Adapter {str(source)!r} is neither a local folder nor fetchable from the Hugging Face Hub ({why}); "
            "download it and pass `adapter=` its folder."
        ) from None
    if not (folder / ADAPTER_CONFIG).is_file():
        raise FileNotFoundError(f"The Hub repository {str(source)!r} has no {ADAPTER_CONFIG}: not a peft adapter.")
    return AdapterSource(folder, f"{source}@{folder.name}")


def llava_module_name(name: str, decoder: str, projector: str | None) -> str:
    """A module of LLaVA's own model class, named as in the loaded model: ``model.layers.…`` /
    ``model.embed_tokens`` / ``model.norm`` under ``decoder`` (the language model's module path),
    ``model.mm_projector.{0,2}`` as ``projector``'s ``linear_{1,2}``; other names are returned as they are."""
    match = re.fullmatch(r"model\.mm_projector\.(\d+)(.*)", name)
    if match and projector is not None and match.group(1) in _PROJECTOR:
        return f"{projector}.{_PROJECTOR[match.group(1)]}{match.group(2)}"
    match = re.fullmatch(r"model\.((?:layers|embed_tokens|norm)(?:\..+)?)", name)
    if match:
        return f"{decoder}.{match.group(1)}"
    return name


def apply_adapter(model: Any, source: AdapterSource) -> Any:
    """``model`` with the adapter's LoRA update merged into its weights (and LLaVA's stored projector, when the
    folder has one), in the model's dtype. Returns the merged model (``peft``'s ``merge_and_unload``).

    Raises:
        ValueError: a LoRA module or a stored weight that is not in the model.
        MissingDependencyError: ``peft`` is not installed.
    """
    try:
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    except ImportError as err:
        from mmjudge.models import missing_dependency

        raise missing_dependency(err, "A LoRA adapter (`adapter=`)") from None
    modules = dict(model.named_modules())
    place = _placer(model, modules)
    state, targets = {}, set()
    for key, value in _read_adapter_weights(source.folder).items():
        match = _LORA_KEY.match(key.removeprefix("base_model.model."))
        if match is None:
            raise ValueError(f"{source.identity}: {key!r} is not a LoRA weight (lora_A / lora_B) of a peft adapter.")
        module = place(match.group("module"), key)
        targets.add(module)
        state[f"base_model.model.{module}.{match.group('part')}"] = value
    config = LoraConfig.from_pretrained(str(source.folder))
    config.target_modules = sorted(targets)  # exactly the modules the weights are for, by their full names
    config.inference_mode = True
    wrapped = get_peft_model(model, config)
    loaded = set_peft_model_state_dict(wrapped, state)
    stray = [k for k in getattr(loaded, "unexpected_keys", []) if "lora_" in k]
    if stray:
        raise ValueError(f"{source.identity}: peft could not place the adapter weight {stray[0]!r}.")
    merged = wrapped.merge_and_unload()
    extra = source.folder / EXTRA_WEIGHTS
    if extra.is_file():
        _load_extra_weights(merged, extra, _placer(merged, dict(merged.named_modules())), source.identity)
    return merged


def _placer(model: Any, modules: dict[str, Any]):
    """``place(module_name, key)``: the loaded model's name for an adapter's module, or a ``ValueError``."""
    decoder = model.get_decoder() if hasattr(model, "get_decoder") else None
    decoder_name = next((n for n, m in modules.items() if m is decoder), "model")
    projector = next((n for n in modules if n.endswith("multi_modal_projector")), None)

    def place(name: str, key: str) -> str:
        if name in modules:
            return name
        mapped = llava_module_name(name, decoder_name, projector)
        if mapped in modules:
            return mapped
        raise ValueError(f"The adapter weight {key!r} is for a module {name!r} that this model does not have.")

    return place


def _read_adapter_weights(folder: Path) -> dict[str, Any]:
    for name in WEIGHT_FILES:
        path = folder / name
        if path.is_file():
            return _read_weights(path)
    raise FileNotFoundError(f"The adapter folder {str(folder)!r} has none of {', '.join(WEIGHT_FILES)}.")


def _read_weights(path: Path) -> dict[str, Any]:
    """The tensors of one adapter file (safetensors, or ``torch.save`` read with ``weights_only``: nothing in it
    runs). A damaged or truncated file (an interrupted download) is one ``ValueError`` line naming it.
    (:func:`mmjudge.encoders.checkpoint_files.read_torch_state` is the same reading a layer above the judges.)"""
    import pickle

    import torch
    from safetensors import SafetensorError  # (a transformers dependency)
    from safetensors.torch import load_file

    try:
        if path.suffix == ".safetensors":
            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, SafetensorError, RuntimeError, EOFError, OSError, ValueError) as err:
        reason = " ".join(str(err).split()).split(". ")[0][:200] or type(err).__name__  # its first sentence
        raise ValueError(
            f"The adapter file {str(path)!r} cannot be read ({reason}): download it again, or pass the folder of a "
            "complete adapter."
        ) from None
    if not isinstance(state, dict):
        raise ValueError(f"The adapter file {str(path)!r} holds {type(state).__name__}, not a dict of tensors.")
    return state


def _load_extra_weights(model: Any, path: Path, place, identity: str) -> None:
    """LLaVA's ``non_lora_trainables.bin`` (keys ``base_model.model.model.mm_projector.0.weight`` …) copied over
    the model's own, its keys shortened as LLaVA's loader shortens them (``base_model.`` off, then ``model.``
    off when they start with ``model.model.``), but a key that names no weight of the model is an error here
    (LLaVA's ``load_state_dict(strict=False)`` would skip it)."""
    import torch

    stored = _read_weights(path)
    stored = {(k[len("base_model.") :] if k.startswith("base_model.") else k): v for k, v in stored.items()}
    if any(k.startswith("model.model.") for k in stored):
        stored = {(k[len("model.") :] if k.startswith("model.") else k): v for k, v in stored.items()}
    params = dict(model.named_parameters())
    for key, value in stored.items():
        module, _, leaf = key.rpartition(".")
        target = f"{place(module, key)}.{leaf}"
        if target not in params:
            raise ValueError(f"{identity}: {EXTRA_WEIGHTS} holds {key!r}, which is not a weight of this model.")
        with torch.no_grad():
            params[target].copy_(value.to(params[target].dtype))
