"""Checkpoint files written by other projects' code: found or named in one line, read without running
their code, and named by their content.

* :func:`require_file` — the file, or one line saying where to get it (``FileNotFoundError``), or what the
  path is instead (a ``ValueError``: a folder, a device such as ``/dev/zero``, a FIFO, a symbolic link loop);
* :func:`read_torch_file` — ``torch.load`` for files that other projects pickled with their own classes in
  them (PyTorch Lightning's hyper-parameter dicts, ``argparse.Namespace``, callback states) and for
  TorchScript archives. Tensors and the containers PyTorch itself allows with ``weights_only=True`` load as
  usual; any other class becomes an inert :class:`ForeignObject` holding the arguments, items and state it
  was pickled with. Nothing from the file is ever called (a TorchScript archive's code included), so a
  hostile file can do no more than a ``weights_only`` one; :func:`torchscript_tensors` names a TorchScript
  module's tensors as its ``state_dict`` would;
* :func:`read_torch_state` — ``torch.load(weights_only=True)`` for files mmjudge writes itself (a training
  run's resume state): tensors, numbers, strings and containers, plus only the globals the caller names;
  anything else is refused in one line, before any of it is built;
* :func:`file_sha256` / :func:`checkpoint_fingerprint` — the whole file's SHA-256 (what model cards
  publish) and its short form for signatures (``sha256-<16 hex>``): the same file gives the same value
  wherever it lies and whatever it is called.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "w.bin"
>>> _ = path.write_bytes(b"abc")
>>> checkpoint_fingerprint(path)
'sha256-ba7816bf8f01cfea'
>>> require_file(path.with_name("missing.pth"), "PAC-S checkpoint", "https://example.org/w.pth")
Traceback (most recent call last):
FileNotFoundError: PAC-S checkpoint '...missing.pth' does not exist: download it from https://example.org/w.pth.
>>> require_file("/dev/zero", "PAC-S checkpoint", "https://example.org/w.pth")
Traceback (most recent call last):
ValueError: PAC-S checkpoint '/dev/zero' is a character device, not a regular file: give the checkpoint file
(https://example.org/w.pth).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickle
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_READ_BLOCK = 1 << 22


def require_file(path: str | os.PathLike, what: str, get_it: str) -> Path:
    """``path`` as a ``Path`` when it is a regular file; otherwise one line: ``FileNotFoundError`` naming
    ``what`` is missing and ``get_it`` (where to download it), or ``ValueError`` saying what the path is instead
    (checked with ``stat``, so a FIFO is never opened)."""
    from mmjudge.paths import not_a_regular_file

    found = Path(path).expanduser()
    problem = not_a_regular_file(found)  # /dev/zero, a FIFO, a folder, a link loop: said as such, never "missing"
    if problem is not None:
        raise ValueError(f"{what} {str(found)!r} is {problem}: give the checkpoint file ({get_it}).")
    if not found.is_file():
        raise FileNotFoundError(f"{what} {str(found)!r} does not exist: download it from {get_it}.")
    return found


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of the whole file, hex (as ``sha256sum`` prints it)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_READ_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


_FINGERPRINTS: dict[tuple, str] = {}


def checkpoint_fingerprint(path: str | os.PathLike) -> str:
    """``sha256-`` and the first 16 hex digits of :func:`file_sha256`: a checkpoint's name in signatures.
    Hashed once per process for an unchanged file (same path, size and modification time): loading several
    configurations of one checkpoint reads a 1.7 GB ViT-L/14 file's bytes for hashing once."""
    resolved = Path(path).expanduser().resolve()
    stat = resolved.stat()
    key = (str(resolved), stat.st_size, stat.st_mtime_ns)
    if key not in _FINGERPRINTS:
        _FINGERPRINTS[key] = "sha256-" + file_sha256(resolved)[:16]
    return _FINGERPRINTS[key]


class ForeignObject(dict):
    """An object of a class from another project, read back without that project: its constructor
    arguments (``foreign_args``), its items when it was a mapping, and the state pickled with it
    (``foreign_state``). ``foreign_name`` is the class's full name."""

    foreign_name = ""
    # Class-level defaults: unpickling makes instances with __new__ alone, without __init__.
    foreign_args: tuple = ()
    foreign_kwargs: dict = {}
    foreign_state: Any = None

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__()
        self.foreign_args, self.foreign_kwargs, self.foreign_state = args, kwargs, None

    def __setstate__(self, state: Any) -> None:
        self.foreign_state = state

    def fields(self) -> dict[str, Any]:
        """Its items, or the attributes in its pickled state (an ``AttributeDict``, a ``Namespace``)."""
        out = dict(self)
        state = self.foreign_state
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, slots)
            state = state[0]
        if isinstance(state, dict):
            out.update(state)
        return out


_FOREIGN: dict[str, type] = {}


def _stand_in(full_name: str) -> type:
    if full_name not in _FOREIGN:
        short = full_name.rsplit(".", 1)[-1]
        _FOREIGN[full_name] = type(short, (ForeignObject,), {"foreign_name": full_name})
    return _FOREIGN[full_name]


def _allowed_globals() -> dict[str, Any]:
    # PyTorch's own vetted list for weights_only loading (tensor rebuild functions, dtypes, OrderedDict …).
    from torch import _weights_only_unpickler

    allowed = dict(_weights_only_unpickler._get_allowed_globals())
    allowed["argparse.Namespace"] = argparse.Namespace  # plain attribute bags; rebuilding one runs nothing
    return allowed


class _InertUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        allowed = _allowed_globals()
        return allowed[full] if full in allowed else _stand_in(full)


_INERT_PICKLE = types.SimpleNamespace(
    Unpickler=_InertUnpickler,
    load=lambda f, **kw: _InertUnpickler(f, **kw).load(),
    __name__="mmjudge_inert_pickle",
)


def read_torch_file(path: str | os.PathLike) -> Any:
    """What ``torch.save`` (or ``torch.jit.save``) wrote to ``path``, on the CPU, with other projects' classes
    read as :class:`ForeignObject` (see the module's description). A TorchScript archive (OpenAI's CLIP ``.pt``
    files) is read the same way, as data: its modules become ``ForeignObject`` objects named ``__torch__.…``
    (:func:`torchscript_tensors` gives their tensors). ``torch.load`` would hand such an archive to
    ``torch.jit.load``, which runs the archive's ``__setstate__`` methods — TorchScript, which can write files.

    Raises:
        ValueError: the file is not something ``torch.save`` wrote (one line, with PyTorch's reason).
    """
    import torch

    try:
        with open(Path(path), "rb") as f, torch.serialization._open_zipfile_reader(f) as archive:
            if _is_torchscript(archive):
                # torch.load's own reading of a zip archive, minus its detour to torch.jit.load.
                return torch.serialization._load(archive, "cpu", _INERT_PICKLE)
    except RuntimeError:
        pass  # not a zip archive: the legacy format, read below
    except (pickle.UnpicklingError, EOFError, ValueError, OSError, AttributeError) as err:
        raise ValueError(f"{str(path)!r} is not a PyTorch checkpoint ({_first_line(err)}).") from None
    try:
        return torch.load(Path(path), map_location="cpu", weights_only=False, pickle_module=_INERT_PICKLE)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, OSError, AttributeError) as err:
        raise ValueError(f"{str(path)!r} is not a PyTorch checkpoint ({_first_line(err)}).") from None


def _is_torchscript(archive: Any) -> bool:
    """A ``torch.jit.save`` archive holds ``constants.pkl`` (PyTorch's own test, ``_is_torchscript_zip``)."""
    return any(name == "constants.pkl" or name.endswith("/constants.pkl") for name in archive.get_all_records())


def _first_line(err: BaseException) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def torchscript_tensors(module: Any, prefix: str = "") -> dict[str, Any]:
    """The tensors of a TorchScript module read by :func:`read_torch_file`, by attribute path, as
    ``state_dict()`` names them (``visual.conv1.weight``). Its sub-modules are followed; a module that
    pickled its own state (``__getstate__``) gives none.

    >>> import torch
    >>> leaf = _stand_in("__torch__.Linear")()
    >>> leaf.foreign_state = {"weight": torch.ones(1), "training": True}
    >>> top = _stand_in("__torch__.Model")()
    >>> top.foreign_state = {"lin": leaf, "scale": torch.zeros(1)}
    >>> sorted(torchscript_tensors(top))
    ['lin.weight', 'scale']
    """
    import torch

    out: dict[str, Any] = {}
    state = module.foreign_state if isinstance(module, ForeignObject) else None
    if not isinstance(state, dict):
        return out
    for name, value in state.items():
        if isinstance(value, torch.Tensor):
            out[prefix + str(name)] = value
        elif isinstance(value, ForeignObject) and value.foreign_name.startswith("__torch__."):
            out.update(torchscript_tensors(value, f"{prefix}{name}."))
    return out


def read_torch_state(path: str | os.PathLike, what: str, allowed: Sequence[Any] = ()) -> Any:
    """What ``torch.save`` wrote to ``path``, on the CPU, read by PyTorch's ``weights_only`` unpickler: tensors,
    numbers, strings, ``None`` and containers of them, plus the globals in ``allowed`` (objects, or
    ``(object, "module.name")`` pairs for a name the object was pickled under). Nothing else is built or
    called, so a ``__reduce__`` in the file never runs.

    >>> import tempfile, pathlib, torch
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "state.pt"
    >>> torch.save({"step": 3, "rng": torch.zeros(2, dtype=torch.uint8)}, path)
    >>> read_torch_state(path, "training state")["step"]
    3
    >>> torch.save({"ok": print}, path)
    >>> read_torch_state(path, "training state")
    Traceback (most recent call last):
    ValueError: '...state.pt' holds more than training state (GLOBAL print ...); it was not loaded, ... run code. ...

    Raises:
        ValueError: the file holds other objects, or is not something ``torch.save`` wrote (one line).
    """
    import torch

    try:
        with torch.serialization.safe_globals(list(allowed)):
            return torch.load(Path(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        reason = _refusal_reason(str(err))
        raise ValueError(
            f"{str(path)!r} holds more than {what} ({reason}); it was not loaded, because loading it could run "
            "code. Use a file this program wrote, or delete it to start over."
        ) from None
    except (RuntimeError, EOFError, ValueError, OSError, AttributeError) as err:
        raise ValueError(f"{str(path)!r} is not a PyTorch file holding {what} ({_first_line(err)}).") from None


def _refusal_reason(message: str) -> str:
    """The line of PyTorch's ``weights_only`` refusal that names what was refused (the rest is advice to
    load the file unsafely).

    >>> _refusal_reason("Weights only load failed. Re-running ...\\n\\tWeightsUnpickler error: Unsupported global: "
    ...                 "GLOBAL io.open was not an allowed global by default. Please use ...")
    'GLOBAL io.open was not an allowed global by default'
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        found = line.find("GLOBAL ")
        if found >= 0:
            return line[found:].split(". ")[0].rstrip(".")
    for line in lines:
        if line.startswith("Unsupported") or "WeightsUnpickler error:" in line:
            text = line.split("WeightsUnpickler error:")[-1].strip()
            if text:
                return text.split(". ")[0].rstrip(".")
    return "objects other than tensors and plain values"


def plain_fields(value: Any) -> dict[str, Any]:
    """A hyper-parameter container as a plain dict: a dict, an ``argparse.Namespace`` or a
    :class:`ForeignObject` (e.g. Lightning's ``AttributeDict``); anything else gives ``{}``.

    >>> plain_fields(argparse.Namespace(pool="cls")), plain_fields(None)
    ({'pool': 'cls'}, {})
    """
    if isinstance(value, ForeignObject):
        return value.fields()
    if isinstance(value, argparse.Namespace):
        return dict(vars(value))
    if isinstance(value, dict):
        return dict(value)
    return {}
