"""Training VELA on LongCap-Arena: LoRA on the LLM, the projection and the head; resumable.

The published configuration (the defaults of :class:`TrainConfig`): LoRA r=4, α=16, dropout 0.1 on
``q_proj``/``v_proj``; AdamW with learning rates 5e-5 (LLM adapter), 1e-4 (projection), 3e-4 (head:
mode embedding, criterion weights, bias), weight decay 0.01; 4 epochs, batch size 1, seed 42. The loss is
the mean squared error between the three predicted scores and the human scores scaled to [0, 1]
(``score_range`` from the training data). Each epoch ends with Kendall τ-c per criterion on the validation
items (:func:`kendall_tau_c`); the best epoch (mean τ over criteria) is kept in ``best/``.

Nothing is lost when interrupted: every ``save_every`` optimizer steps and at each epoch end, ``last/``
receives the adapter + head, the optimizer, the scheduler, the random-number generators and the position
in the data; :func:`train_vela` resumes from it, and a resumed run reaches exactly the weights of an
uninterrupted one. CLIP is frozen; its embeddings are computed once per sample.

>>> scaled([1.0, 3.0, 5.0], (1.0, 5.0))
[0.0, 0.5, 1.0]
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.metrics.vela.criteria import CRITERIA, CRITERION_NAMES
from mmjudge.metrics.vela.loading import new_vela
from mmjudge.metrics.vela.model import DEFAULT_LLM, VelaModel

logger = logging.getLogger(__name__)

STATE_FILE = "training_state.pt"


@dataclass
class TrainConfig:
    """Optimisation settings (defaults: the authors' released configuration)."""

    epochs: int = 4
    lr_llm: float = 5e-5
    lr_projection: float = 1e-4
    lr_head: float = 3e-4
    weight_decay: float = 0.01
    batch_size: int = 1
    grad_accum: int = 1
    seed: int = 42
    save_every: int = 500  # optimizer steps between resumable saves (0: only at epoch ends)
    gradient_checkpointing: bool = True  # on GPU only
    eval_batch_size: int = 8

    def check(self) -> None:
        for name in ("epochs", "batch_size", "grad_accum", "eval_batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"Expected `{name}` to be a positive integer, but got {getattr(self, name)!r}.")
        for name in ("lr_llm", "lr_projection", "lr_head"):
            if not float(getattr(self, name)) >= 0:
                raise ValueError(f"Expected `{name}` to be a non-negative number, but got {getattr(self, name)!r}.")


def scaled(values: Sequence[float], score_range: Sequence[float]) -> list[float]:
    """Human scores mapped linearly from ``score_range`` to [0, 1]."""
    lo, hi = float(score_range[0]), float(score_range[1])
    return [(float(v) - lo) / (hi - lo) if hi > lo else 0.5 for v in values]


def check_items(items: Sequence[dict], where: str) -> list[dict]:
    """Training / validation items: ``text``, ``image``, ``references`` and the three criterion scores
    (``descriptiveness``, ``relevance``, ``fluency``), each checked with the item named."""
    if not items:
        raise ValueError(f"{where}: no items.")
    for n, it in enumerate(items):
        name = f"{where} item {it.get('id', n)!r}"
        if not isinstance(it.get("text"), str) or not it["text"].strip():
            raise ValueError(f"{name}: no candidate text.")
        if not it.get("references"):
            raise ValueError(f"{name}: no references.")
        if it.get("image") is None:
            raise ValueError(f"{name}: no image.")
        for crit in CRITERIA:
            value = it.get(CRITERION_NAMES[crit])
            if value is None or not math.isfinite(float(value)):
                raise ValueError(f"{name}: no {CRITERION_NAMES[crit]} score.")
    return list(items)


def items_from_dataset(dataset: Any) -> list[dict]:
    """Item dicts from a LongCap-Arena ``Dataset`` split (``mmjudge.load_dataset("longcap_arena", split=…)``)."""
    keep = ("id", "text", "image", "references", *CRITERION_NAMES.values())
    return [{k: row[k] for k in keep if k in row} for row in dataset]


def optimizer_groups(vela: VelaModel, config: TrainConfig) -> list[dict]:
    """AdamW parameter groups: LLM adapter, projection, head (a fixed order, so states reload)."""
    llm = [p for p in vela.llm.parameters() if p.requires_grad]
    projection = list(vela.head.projection.parameters())
    head = [p for n, p in vela.head.named_parameters() if not n.startswith("projection.")]
    groups = [
        {"params": projection, "lr": config.lr_projection, "name": "projection"},
        {"params": head, "lr": config.lr_head, "name": "head"},
    ]
    if llm:
        groups.insert(0, {"params": llm, "lr": config.lr_llm, "name": "llm"})
    return groups


def _rng_state() -> dict:
    """Every generator's state as tensors and numbers only, so that the state file reads back with PyTorch's
    ``weights_only`` loader and nothing else (:func:`_read_state`)."""
    import torch

    version, mt, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state = {
        "torch": torch.get_rng_state(),
        "python": {"version": int(version), "state": torch.tensor(mt, dtype=torch.int64), "gauss": gauss},
        "numpy": {
            "kind": str(kind),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
    """Restore :func:`_rng_state`'s generators (also from a state file of an earlier mmjudge, which held
    Python's tuple and NumPy's array as they are)."""
    import torch

    torch.set_rng_state(state["torch"])
    python, numpy_state = state["python"], state["numpy"]
    if isinstance(python, dict):
        python = (python["version"], tuple(int(v) for v in python["state"].tolist()), python["gauss"])
    random.setstate(python)
    if isinstance(numpy_state, dict):
        keys = numpy_state["keys"].numpy().astype(np.uint32)
        numpy_state = (numpy_state["kind"], keys, numpy_state["pos"], numpy_state["has_gauss"],
                       numpy_state["cached_gaussian"])  # fmt: skip
    np.random.set_state(numpy_state)
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _read_state(path: Path) -> dict:
    """``last/training_state.pt`` through the ``weights_only`` reader: tensors, numbers, strings and
    containers; from a state file of an earlier mmjudge also NumPy's generator state, an array (its three
    reconstruction globals are the whole allow-list). Anything else is refused in one line, never run."""
    from mmjudge.encoders.checkpoint_files import read_torch_state

    numpy_array = [np.ndarray, np.dtype, type(np.dtype(np.uint32))]
    reconstruct = np.ndarray.__reduce__(np.zeros(1))[0]  # NumPy's own array-rebuilding function
    for name in ("numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct"):
        numpy_array.append((reconstruct, name))
    saved = read_torch_state(path, "VELA training state", allowed=numpy_array)
    if not isinstance(saved, dict) or not isinstance(saved.get("settings"), dict):
        raise ValueError(f"{str(path)!r} is not VELA training state (no settings); delete its folder to start over.")
    return saved


def evaluate_tau(vela: VelaModel, items: Sequence[dict], features: Any, batch_size: int) -> dict[str, float]:
    """Kendall τ-c per criterion (``descriptiveness`` …) of the model's scores on ``items``; ``features``
    holds their ``g_i2c`` rows in the same order (:func:`clip_features`)."""
    scores = _predict(vela, items, features, batch_size)
    return {
        CRITERION_NAMES[crit]: kendall_tau_c(scores[:, j], [float(it[CRITERION_NAMES[crit]]) for it in items])
        for j, crit in enumerate(vela.config.criteria)
    }


def kendall_tau_c(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-c of ``x`` and ``y`` (scipy's, as the meta-evaluation computes it), NaN where it is
    undefined (fewer than two items, a constant column, a NaN): validation picks the best epoch by it and
    must not stop on a degenerate split. Written here, not imported from :mod:`mmjudge.metaeval`: a metric
    does not reach into the layer above it.

    >>> round(kendall_tau_c([1, 2, 3, 4], [1, 3, 2, 4]), 4), kendall_tau_c([1, 1, 1], [1, 2, 3])
    (0.6667, nan)
    """
    import warnings

    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant column; the answer is NaN either way
        return float(stats.kendalltau(np.asarray(x, float), np.asarray(y, float), variant="c").statistic)


def _predict(vela: VelaModel, items: Sequence[dict], features: Any, batch_size: int) -> np.ndarray:
    vela.llm.eval()
    vela.head.eval()
    r2c = vela.r2c_features([it["references"] for it in items], [it["text"] for it in items], batch_size)
    import torch

    with torch.inference_mode():
        return vela.scores_from_features(r2c, features).float().cpu().numpy()


def clip_features(vela: VelaModel, items: Sequence[dict], batch_size: int = 64, progress: bool = False):
    """``g_i2c`` per item, float32 ``(len(items), 2·clip_dim)`` in the items' order (CLIP is frozen:
    computed once, before training). Rows follow list positions, not ids or texts: two items with the
    same caption and different images get their own features. Images are decoded ``batch_size`` at a
    time (a training set's images need not all fit in memory at once)."""
    import torch

    from mmjudge.images import load_image
    from mmjudge.progress import progress_bar

    out = []
    for s in progress_bar(range(0, len(items), batch_size), desc="CLIP features", disable=not progress):
        chunk = items[s : s + batch_size]
        images = [load_image(it["image"], where=f"item {it.get('id', s + k)!r} image") for k, it in enumerate(chunk)]
        out.append(vela.clip_features(images, [it["text"] for it in chunk]))
    return torch.cat(out)


def train_vela(
    train_items: Sequence[dict],
    val_items: Sequence[dict],
    out_dir: str | os.PathLike,
    llm: Any = DEFAULT_LLM,
    clip_model: Any = None,
    config: TrainConfig | None = None,
    device: str | None = None,
    dtype: Any = None,
    progress: bool = True,
    stop_after_steps: int | None = None,
    on_step: Callable[[int, float], None] | None = None,
    **model_config: Any,
) -> dict:
    """Train VELA and return ``{"best": {...}, "history": [...], "best_dir": ...}``.

    Args:
        train_items, val_items: item dicts (:func:`items_from_dataset`).
        out_dir: ``best/`` (the checkpoint to load), ``last/`` (resume state), ``history.json``.
        llm, clip_model, device, dtype: see :func:`mmjudge.metrics.vela.new_vela`; ``model_config`` sets
            :class:`~mmjudge.metrics.vela.VelaConfig` fields (``projection_dim``, ``max_length`` …).
        config: :class:`TrainConfig`.
        stop_after_steps: stop (as if interrupted) after this many optimizer steps, after saving.
        on_step: called with (global step, loss) after each optimizer step.

    A ``last/`` folder in ``out_dir`` is resumed from (same settings required).
    """
    import torch

    config = config or TrainConfig()
    config.check()
    train_items = check_items(train_items, "training data")
    val_items = check_items(val_items, "validation data")
    out = Path(out_dir).expanduser()
    last, best_dir = out / "last", out / "best"
    lo = min(float(it[CRITERION_NAMES[c]]) for it in train_items for c in CRITERIA)
    hi = max(float(it[CRITERION_NAMES[c]]) for it in train_items for c in CRITERIA)
    random.seed(config.seed)
    np.random.seed(config.seed)
    vela = new_vela(llm, clip_model, device=device, dtype=dtype, seed=config.seed, score_range=(lo, hi), **model_config)
    if vela.device.type == "cuda" and config.gradient_checkpointing:
        vela.llm.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    optimizer, scheduler, total = _optimizer(vela, config, len(train_items))
    state = {"epoch": 0, "position": 0, "step": 0, "history": [], "best": None, "settings": asdict(config)}
    saved = _resume(last, config, vela, optimizer, scheduler, state)
    features = clip_features(vela, list(train_items) + list(val_items), progress=progress)
    targets = torch.tensor(
        [scaled([it[CRITERION_NAMES[c]] for c in vela.config.criteria], (lo, hi)) for it in train_items],
        device=vela.device,
    )
    loop = _TrainingLoop(
        vela,
        config,
        optimizer,
        scheduler,
        state,
        ids=vela.prompt_ids([it["references"] for it in train_items], [it["text"] for it in train_items]),
        features=features[: len(train_items)],
        targets=targets,
        val_items=val_items,
        val_features=features[len(train_items) :],
        last=last,
        best_dir=best_dir,
        on_step=on_step,
        stop_after_steps=stop_after_steps,
    )
    stopped = loop.run(total, progress, saved["rng"] if saved is not None else None)
    (out / "history.json").write_text(
        json.dumps({"history": state["history"], "best": state["best"]}, indent=2), encoding="utf-8"
    )
    return {
        "best": state["best"],
        "history": state["history"],
        "best_dir": str(best_dir),
        "finished": not stopped,
        "step": state["step"],
        "model": vela,
    }


def _optimizer(vela: VelaModel, config: TrainConfig, n_items: int) -> tuple[Any, Any, int]:
    """AdamW over the parameter groups, a linear decay to 0 over every optimizer step, and that count."""
    import torch

    optimizer = torch.optim.AdamW(optimizer_groups(vela, config), weight_decay=config.weight_decay)
    total = math.ceil(n_items / (config.batch_size * config.grad_accum)) * config.epochs
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(0.0, 1.0 - step / max(1, total)))
    return optimizer, scheduler, total


def _resume(last: Path, config: TrainConfig, vela: VelaModel, optimizer, scheduler, state: dict) -> dict | None:
    """Load ``last/`` (weights, optimizer, scheduler, position) into a fresh run, if there is one; the saved
    state (its random-number generators are restored later, where the uninterrupted run had them)."""
    if not (last / STATE_FILE).is_file():
        return None
    from mmjudge.metrics.vela.loading import read_checkpoint

    saved = _read_state(last / STATE_FILE)
    mine = {k: v for k, v in asdict(config).items() if k not in ("save_every", "eval_batch_size")}
    theirs = {k: v for k, v in saved["settings"].items() if k not in ("save_every", "eval_batch_size")}
    if mine != theirs:
        raise ValueError(f"{str(last)!r} was written with other training settings {theirs}; use another out_dir.")
    _, tensors, _ = read_checkpoint(last)
    vela.load_state(tensors, repr(str(last)))
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
    state.update({k: saved[k] for k in ("epoch", "position", "step", "history", "best")})
    logger.info("VELA: resuming at epoch %d, sample %d, step %d", state["epoch"], state["position"], state["step"])
    return saved


@dataclass
class _TrainingLoop:
    """The optimisation loop of :func:`train_vela`: epochs of shuffled batches, an optimizer step every
    ``grad_accum`` batches, validation and ``best/`` at each epoch end, ``last/`` as often as asked."""

    vela: VelaModel
    config: TrainConfig
    optimizer: Any
    scheduler: Any
    state: dict
    ids: list
    features: Any
    targets: Any
    val_items: Sequence[dict]
    val_features: Any
    last: Path
    best_dir: Path
    on_step: Callable[[int, float], None] | None = None
    stop_after_steps: int | None = None
    bar: Any = None

    def run(self, total: int, progress: bool, rng: dict | None) -> bool:
        """Every epoch left (``rng``: a resumed run's generators, restored first); ``True`` when stopped."""
        from mmjudge.progress import progress_bar

        if rng is not None:
            _set_rng_state(rng)
        stopped = False
        self.bar = progress_bar(
            total=total, initial=self.state["step"], desc="VELA training", disable=not progress, dynamic_ncols=True
        )
        try:
            while self.state["epoch"] < self.config.epochs and not stopped:
                stopped = self.run_epoch()
        finally:
            self.bar.close()
        return stopped

    def run_epoch(self) -> bool:
        """The current epoch from where it stands; ``True`` when stopped by ``stop_after_steps``."""
        import torch

        state, config = self.state, self.config
        epoch = state["epoch"]
        order = np.random.RandomState(config.seed + epoch).permutation(len(self.ids)).tolist()
        self._train_mode()
        micro, window_loss = 0, 0.0
        while state["position"] < len(order):
            batch = order[state["position"] : state["position"] + config.batch_size]
            pred = self.vela.scores_from_features(
                self.vela.llm_features([self.ids[i] for i in batch]), self.features[batch]
            )
            loss = torch.nn.functional.mse_loss(pred, self.targets[batch])
            (loss / config.grad_accum).backward()
            window_loss += float(loss.detach()) / config.grad_accum
            micro += 1
            state["position"] += len(batch)
            at_end = state["position"] >= len(order)
            if micro < config.grad_accum and not at_end:
                continue
            self._optimizer_step(epoch, window_loss)
            micro, window_loss = 0, 0.0
            if at_end:
                self._validate(epoch)
                state["epoch"], state["position"] = epoch + 1, 0
            stop = self.stop_after_steps is not None and state["step"] >= self.stop_after_steps
            if at_end or stop or (config.save_every and state["step"] % config.save_every == 0):
                _save_resume(self.vela, self.optimizer, self.scheduler, state, self.last)
            if stop or at_end:
                return stop
        return False

    def _train_mode(self) -> None:
        self.vela.llm.train()
        self.vela.head.train()

    def _optimizer_step(self, epoch: int, window_loss: float) -> None:
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.state["step"] += 1
        self.bar.update(1)
        self.bar.set_postfix(epoch=epoch + 1, loss=f"{window_loss:.4f}")
        if self.on_step is not None:
            self.on_step(self.state["step"], window_loss)

    def _validate(self, epoch: int) -> None:
        """Kendall τ-c on the validation items; a better mean τ (a number beats NaN) is saved as ``best/``."""
        tau = evaluate_tau(self.vela, self.val_items, self.val_features, self.config.eval_batch_size)
        answered = any(not math.isnan(v) for v in tau.values())
        mean_tau = float(np.nanmean(list(tau.values()))) if answered else float("nan")
        state = self.state
        state["history"].append({"epoch": epoch + 1, "step": state["step"], "tau_c": tau, "mean_tau_c": mean_tau})
        self.bar.set_postfix(epoch=epoch + 1, tau=f"{mean_tau:.3f}")
        best = state["best"]
        if best is None or (
            not math.isnan(mean_tau) and (math.isnan(best["mean_tau_c"]) or mean_tau > best["mean_tau_c"])
        ):
            state["best"] = state["history"][-1]
            self.vela.save(self.best_dir)
        self._train_mode()


def _save_resume(vela: VelaModel, optimizer, scheduler, state: dict, last: Path) -> None:
    """Write ``last/`` atomically enough: weights first, then the state file that marks it complete."""
    import torch

    tmp = last.with_name(last.name + ".tmp")
    vela.save(tmp)
    torch.save(
        {**state, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": _rng_state()},
        tmp / STATE_FILE,
    )
    if last.exists():
        import shutil

        shutil.rmtree(last)
    tmp.rename(last)
