"""VELA's model: an R2C-LLM branch, an I2C-Align branch and a criterion-selected regression head.

* **R2C-LLM**: an instruction LLM reads one prompt holding the references and the candidate
  (:data:`mmjudge/prompts/vela.toml`) in ONE forward pass, no generation;
  ``g_r2c = [mean over tokens of the last hidden states ; last hidden state of the final (end-of-turn) token]``.
* **I2C-Align**: Long-CLIP embeds the image and the candidate (unit vectors, frozen);
  ``g_i2c = [|h_img − h_cand| ; h_img ⊙ h_cand]``.
* **Head**: ``z = projection([g_r2c ; g_i2c])`` (the "projection" parameters, lr 1e-4), a learned mode
  embedding ``e_m`` (size 8) per criterion (desc / rel / flu) and
  ``ŷ_m = clamp(sigmoid(z · (U e_m) + c · e_m + b), 0, 1)``: the mode embedding selects each criterion's
  weight vector ``W_m = U e_m`` (and bias). Concatenating ``e_m`` to the features under one linear layer
  would only shift a bias per criterion, so the three criteria would rank captions identically.

The LLM pass and the CLIP embeddings are computed once per sample and shared by the three criteria.

>>> import torch
>>> from mmjudge.metrics.vela.head import VelaHead
>>> head = VelaHead(feature_dim=6, projection_dim=4, seed=0)
>>> head(torch.zeros(2, 6)).shape  # (samples, criteria desc / rel / flu)
torch.Size([2, 3])
>>> i2c_features(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.6, 0.8]]))
tensor([[0.4000, 0.8000, 0.6000, 0.0000]])
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.metrics.vela.criteria import CRITERIA

logger = logging.getLogger(__name__)

DEFAULT_LLM = "Qwen/Qwen2.5-3B-Instruct"
FORMAT = "mmjudge-vela/1"
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "vela.safetensors"
FOREIGN_HINT = (
    "Only checkpoints written by `mmjudge train-vela` load. The authors' release (Hub Ka2ukiMatsuda/vela, "
    "vela_regressor.safetensors) uses a key layout that could not be read or verified here, so it is refused "
    "rather than loaded into the wrong places."
)


def _torch():
    import torch

    return torch


@dataclass
class VelaConfig:
    """Everything that fixes a VELA model's shape and inputs; saved as ``config.json`` beside the weights.

    Attributes:
        llm: the LLM the head was trained on (Hub id, or ``"local"`` when it was a folder).
        llm_revision: its revision or content fingerprint.
        llm_hidden_size, clip_dim: feature sizes (checked at load time).
        clip: the CLIP model's identity (``name@revision``; a converted Long-CLIP folder is ``local@…``).
        projection_dim: width of the projection ``z``.
        mode_dim: size of the criterion (mode) embedding (8, as the authors' release).
        criteria: criterion order of the head's outputs.
        lora_r, lora_alpha, lora_dropout, lora_targets: the LoRA adapter on the LLM (r = 0: none).
        max_length: LLM prompt length limit in tokens.
        prompt_version: the version of ``prompts/vela.toml`` the model was trained with.
        score_range: (low, high) of the human scores the targets were scaled from; outputs are on [0, 1].
    """

    llm: str = DEFAULT_LLM
    llm_revision: str = "main"
    llm_hidden_size: int = 0
    clip: str = ""
    clip_dim: int = 0
    projection_dim: int = 256
    mode_dim: int = 8
    criteria: tuple = CRITERIA
    lora_r: int = 4
    lora_alpha: int = 16
    lora_dropout: float = 0.1
    lora_targets: tuple = ("q_proj", "v_proj")
    max_length: int = 2048
    prompt_version: str = ""
    score_range: tuple = (0.0, 1.0)
    format: str = FORMAT
    extra: dict = field(default_factory=dict)

    @property
    def feature_dim(self) -> int:
        return 2 * self.llm_hidden_size + 2 * self.clip_dim

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict) -> VelaConfig:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        for key in ("criteria", "lora_targets", "score_range"):
            if key in known:
                known[key] = tuple(known[key])
        return cls(**known)


def i2c_features(image_vectors, text_vectors):
    """``[|h_img − h_cand| ; h_img ⊙ h_cand]`` (both unit vectors, as Long-CLIP embeds them)."""
    torch = _torch()
    return torch.cat([(image_vectors - text_vectors).abs(), image_vectors * text_vectors], dim=-1)


def load_prompt(version: str | None = None) -> dict:
    """The bundled VELA prompt; a different stored ``version`` is refused (the head was trained on it)."""
    from mmjudge.prompts import load_prompt_file

    prompt = load_prompt_file("vela")
    if version and str(prompt["version"]) != str(version):
        raise ValueError(
            f"This checkpoint was trained with VELA prompt version {version!r}, but this mmjudge ships "
            f"version {prompt['version']!r}: install the mmjudge version that trained it, or retrain."
        )
    return prompt


def render_prompt(tokenizer: Any, references: Sequence[str], candidate: str, prompt: dict) -> str:
    """The one prompt the LLM reads, ending with the end-of-turn token whose hidden state is pooled."""
    refs = "\n".join(f"- {r.strip()}" for r in references)
    user = prompt["user"].strip("\n").format(references=refs, candidate=candidate.strip())
    messages = [{"role": "system", "content": prompt["system"]}, {"role": "user", "content": user}]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
    else:
        text = f"{prompt['system']}\n\n{user}"
    text = text.rstrip()
    eos = tokenizer.eos_token
    if eos and not text.endswith(eos):
        text += eos
    return text


class VelaModel:
    """A loaded VELA model: LLM (+ LoRA), CLIP encoder, head. Use :func:`load_vela` / :func:`new_vela`.

    Attributes:
        llm: the causal LM (a ``peft`` model while training).
        tokenizer: its tokenizer (left padding).
        clip: a :class:`mmjudge.encoders.clip.ClipEncoder`.
        head: the regression head (float32, on the LLM's device).
        config: the :class:`VelaConfig`.
    """

    def __init__(self, llm: Any, tokenizer: Any, clip: Any, head: Any, config: VelaConfig, identities: dict):
        self.llm, self.tokenizer, self.clip, self.head, self.config = llm, tokenizer, clip, head, config
        self.identities = identities
        self.prompt = load_prompt(config.prompt_version or None)
        self.config.prompt_version = str(self.prompt["version"])
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = next(iter(llm.parameters())).device
        self.head.to(self.device)

    # ------------------------------------------------------------------------------------ features
    def prompt_ids(self, references: Sequence[Sequence[str]], candidates: Sequence[str]) -> list[list[int]]:
        """Token ids of each sample's prompt (the last ``max_length`` tokens if longer, with a warning)."""
        texts = [render_prompt(self.tokenizer, r, c, self.prompt) for r, c in zip(references, candidates)]
        return self._tokenize(texts, list(range(len(texts))), warn=True)

    def _tokenize(
        self, texts: Sequence[str], where: Sequence[int], warn: bool, too_long: list | None = None
    ) -> list[list[int]]:
        """Ids of ``texts`` (sample numbers ``where``), cut to the last ``max_length`` tokens. Over-long prompts
        are warned about now (``warn``) or appended to ``too_long`` as ``(sample, tokens)``."""
        ids = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        long = [(i, len(row)) for i, row in zip(where, ids) if len(row) > self.config.max_length]
        if too_long is not None:
            too_long.extend(long)
        if warn:
            self._warn_too_long(long)
        return [row[-self.config.max_length :] for row in ids]

    def _warn_too_long(self, long: Sequence[tuple]) -> None:
        if long:
            first, tokens = min(long)
            warnings.warn(
                f"{len(long)} VELA prompt(s) exceed max_length={self.config.max_length} tokens and lose "
                f"their beginning (first: #{first}, {tokens} tokens).",
                stacklevel=3,
            )

    def llm_features(self, ids: Sequence[Sequence[int]]):
        """``g_r2c`` for one batch of prompts, float32 ``(n, 2·hidden)``: one forward pass, left padding,
        position ids counted over the real tokens (so padding never changes a sample's features)."""
        torch = _torch()
        width = max(len(r) for r in ids)
        pad = self.tokenizer.pad_token_id
        # Built on the CPU and copied without waiting: a blocking copy would first wait for every batch
        # still queued on the GPU, so the CPU could not prepare this one while the previous one runs.
        input_ids = torch.tensor([[pad] * (width - len(r)) + list(r) for r in ids]).to(self.device, non_blocking=True)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in ids]).to(self.device, non_blocking=True)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        decoder = self.llm.get_decoder()
        with torch.profiler.record_function("mmjudge.metrics.vela.llm"):  # a label for benchmarks' --profile
            hidden = decoder(
                input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=False
            ).last_hidden_state.float()
        weights = mask.unsqueeze(-1).float()
        mean = (hidden * weights).sum(1) / weights.sum(1)
        return torch.cat([mean, hidden[:, -1]], dim=-1)

    def r2c_features(
        self,
        references: Sequence[Sequence[str]],
        candidates: Sequence[str],
        batch_size: int = 8,
        progress: bool = False,
    ):
        """``g_r2c`` float32 ``(n, 2·hidden)`` of the samples' prompts, in sample order, without gradients:
        batches of ``batch_size`` prompts of similar length (ordered by characters, close to the token count,
        so they pad little), with a progress bar. Prompts are tokenised batch by batch: the GPU starts on the
        first batch at once, and each later batch is tokenised while the one before it runs."""
        from mmjudge.batching import progress_batches

        torch = _torch()
        texts = [render_prompt(self.tokenizer, r, c, self.prompt) for r, c in zip(references, candidates)]
        n = len(texts)
        if not n:
            return torch.empty(0, 2 * self.config.llm_hidden_size, device=self.device)
        order = sorted(range(n), key=lambda i: len(texts[i]))
        too_long: list = []
        chunks = []
        with torch.inference_mode():
            for batch in progress_batches(
                [order[s : s + batch_size] for s in range(0, n, batch_size)], n, progress, "VELA"
            ):
                chunks.append(self.llm_features(self._tokenize([texts[i] for i in batch], batch, False, too_long)))
            # One gather at the end puts rows back in sample order (per-batch index writes would each wait
            # for the GPU to copy their indices).
            inverse = torch.empty(n, dtype=torch.long)
            inverse[torch.tensor(order, dtype=torch.long)] = torch.arange(n)
            features = torch.cat(chunks)[inverse.to(self.device, non_blocking=True)]
        self._warn_too_long(too_long)
        return features

    def clip_features(self, images: Sequence[Any], candidates: Sequence[str]):
        """``g_i2c`` float32 ``(n, 2·clip_dim)`` from the (frozen, cached) CLIP encoder."""
        return self._i2c(*self._clip_vectors(images, candidates))

    def _clip_vectors(self, images: Sequence[Any], candidates: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Unit image and candidate embeddings (NumPy): all of CLIP's GPU work happens in here."""
        with _torch().inference_mode():
            return self.clip.encode_images(images), self.clip.encode_texts(list(candidates))

    def _i2c(self, image_vectors: np.ndarray, text_vectors: np.ndarray):
        torch = _torch()
        return i2c_features(
            torch.from_numpy(image_vectors).to(self.device), torch.from_numpy(text_vectors).to(self.device)
        )

    def scores_from_features(self, r2c, i2c):
        """Head output ``(n, criteria)`` in [0, 1]."""
        torch = _torch()
        return self.head(torch.cat([r2c, i2c], dim=-1))

    # ------------------------------------------------------------------------------------- scoring
    def score(
        self,
        candidates: Sequence[str],
        images: Sequence[Any],
        references: Sequence[Sequence[str]],
        batch_size: int = 8,
        progress: bool = False,
        timings: dict | None = None,
        overlap: bool | None = None,
    ) -> np.ndarray:
        """Scores ``(n, criteria)`` in [0, 1] for decoded RGB ``images``. Prompts are batched by length.

        ``overlap`` (default: on a GPU) runs the CLIP branch (mostly CPU work: image resizing, tokenising) in a
        background thread, on a CUDA stream of its own, while the LLM batches run. ``timings`` (a dict)
        receives seconds spent in ``llm``, ``clip`` and ``head``, measured one after the other (no overlap)
        so the parts add up."""
        import time
        from concurrent.futures import ThreadPoolExecutor
        from contextlib import nullcontext

        torch = _torch()
        clock = {"llm": 0.0, "clip": 0.0, "head": 0.0}
        sync = torch.cuda.synchronize if self.device.type == "cuda" else (lambda: None)

        clip_device = torch.device(self.clip.device)

        def clip_branch():
            # Its own CUDA stream: each CLIP batch's read-back then waits for CLIP's kernels only. On the
            # default stream it would also wait for every LLM batch queued before it, holding the CLIP
            # thread back by one LLM batch per CLIP batch and leaving CLIP's tail after the LLM is done.
            own_stream = (
                torch.cuda.stream(torch.cuda.Stream(device=clip_device))
                if clip_device.type == "cuda"
                else nullcontext()
            )
            with own_stream:
                return self._clip_vectors(images, candidates)

        if overlap is None:
            overlap = self.device.type == "cuda" and clip_device.type == "cuda"
        overlap = overlap and timings is None
        pool = ThreadPoolExecutor(1) if overlap else None
        try:
            if overlap:
                pending = pool.submit(clip_branch)
            else:
                start = time.perf_counter()
                i2c = self.clip_features(images, candidates)
                sync()
                clock["clip"] += time.perf_counter() - start
            with torch.inference_mode():
                t0 = time.perf_counter()
                r2c = self.r2c_features(references, candidates, batch_size, progress)
                sync()
                clock["llm"] += time.perf_counter() - t0
                if overlap:
                    i2c = self._i2c(*pending.result())
                t1 = time.perf_counter()
                out = self.scores_from_features(r2c, i2c)
                sync()
                clock["head"] += time.perf_counter() - t1
        finally:
            if pool is not None:
                pool.shutdown()
        if timings is not None:
            for key, value in clock.items():
                timings[key] = timings.get(key, 0.0) + value
        return out.float().cpu().numpy()

    # ------------------------------------------------------------------------------------ saving
    def _trainable_tensors(self) -> dict:
        """The checkpoint's tensors as they live in the model (no copies): ``llm.*`` LoRA, ``head.*``."""
        state = {f"head.{k}": v for k, v in self.head.state_dict().items()}
        if self.config.lora_r and not hasattr(self.llm, "peft_config"):
            raise ValueError(
                "This VELA model's LoRA adapter was merged into the LLM; load it with merge_lora=False to save it."
            )
        if self.config.lora_r:
            from peft import get_peft_model_state_dict

            state.update({f"llm.{k}": v for k, v in get_peft_model_state_dict(self.llm).items()})
        return state

    def trainable_state(self) -> dict:
        """The weights a checkpoint holds: the LoRA adapter (``llm.*``) and the head (``head.*``), float32 on CPU."""
        return {k: v.detach().float().cpu().contiguous() for k, v in self._trainable_tensors().items()}

    def save(self, directory: str | os.PathLike) -> str:
        """Write ``config.json`` + ``vela.safetensors`` (LoRA + head) to ``directory``."""
        from safetensors.torch import save_file

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        save_file(self.trainable_state(), str(out / WEIGHTS_FILE), metadata={"format": FORMAT})
        (out / CONFIG_FILE).write_text(self.config.to_json() + "\n", encoding="utf-8")
        return str(out)

    def load_state(self, state: dict, where: str) -> None:
        """Load a checkpoint's tensors; any key or shape that does not fit is one clear ``ValueError``."""
        expected = {k: tuple(v.shape) for k, v in self._trainable_tensors().items()}  # shapes only, no fp32 copy
        missing = sorted(set(expected) - set(state))
        unexpected = sorted(set(state) - set(expected))
        if missing or unexpected:
            raise ValueError(
                f"{where}: its weights do not fit this VELA model (missing {missing[:3]}, unexpected "
                f"{unexpected[:3]}{' …' if len(unexpected) > 3 else ''}). {FOREIGN_HINT}"
            )
        wrong = [k for k in expected if expected[k] != tuple(state[k].shape)]
        if wrong:
            k = wrong[0]
            raise ValueError(
                f"{where}: weight {k} has shape {tuple(state[k].shape)}, but this model needs "
                f"{expected[k]}: load it with the LLM and CLIP it was trained with."
            )
        self.head.load_state_dict({k[len("head.") :]: v for k, v in state.items() if k.startswith("head.")})
        if self.config.lora_r:
            from peft import set_peft_model_state_dict

            set_peft_model_state_dict(self.llm, {k[len("llm.") :]: v for k, v in state.items() if k.startswith("llm.")})
