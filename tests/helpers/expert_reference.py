"""EXPERT's published procedure taken literally (Kim et al., ACL Findings 2025; the authors' ``expert.py`` at
github.com/hjkim811/EXPERT @ 74bbef4), on a ``transformers`` LLaVA — for tests, never the metric's path.

Written here from the authors' steps (their repository has no licence, so none of its code is copied):

* the adapter is merged by ``peft`` itself (``PeftModel.from_pretrained`` + ``merge_and_unload``), as
  LLaVA's ``load_pretrained_model`` does;
* ``rate2token[d]`` is the last id of ``tokenizer.encode(str(d))``;
* the prompt is LLaVA's ``llava_v0`` conversation as ``Conversation.get_prompt`` writes it
  (``SeparatorStyle.SINGLE``, separator ``"###"``), the image placeholder before the first turn;
* the image is ``expand2square``-padded with ``int(255 * mean)`` of the processor's mean;
* one unbatched ``model.generate(do_sample=False, num_beams=1, max_new_tokens=512, output_scores=True,
  return_dict_in_generate=True)``, stopping at ``"###"``; ``output_ids`` are the generated ids with a
  leading BOS, as transformers 4.37 returns them when LLaVA generates from ``inputs_embeds``, so that
  ``output_ids[0, 1:]`` and ``scores`` are aligned as in their script;
* the number: the answer's digits and dots, dots at both ends stripped, ``float``; the digit positions
  found with ``(output_ids[0, 1:] == rate2token[d]).nonzero().squeeze()`` and their rules for several
  matches; the arithmetic on the softmax of ``scores`` in float32 torch.

At development time mmjudge's EXPERT was also checked against the authors' code path itself (LLaVA @ c121f04 under
transformers 4.37.2 and their unmodified ``expert.py``, on the same tiny scripted LLaVAs + random LoRA converted to
LLaVA's model class): max |Δ| 2.1e-7 over 25 scores (answers 0.85, 1.0, 0.05, 0.80, 0.37).
"""

from __future__ import annotations

import math
import re

SYSTEM = (
    "A chat between a curious human and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the human's questions."
)
SCORE_PROMPT = "Evaluate the caption and assign a score on a scale of 0.0 to 1.0.\n\nCaption: {}\n\nScore (0.0~1.0):"


def llava_v0_prompt(messages: list[tuple[str, str | None]]) -> str:
    """``Conversation.get_prompt`` of LLaVA's ``conv_llava_v0`` for ``(role, message)`` pairs (``None``: open)."""
    text = SYSTEM + "###"
    for role, message in messages:
        text += f"{role}: {message}###" if message else f"{role}:"
    return text


def expand2square(image, background):
    from PIL import Image

    width, height = image.size
    if width == height:
        return image
    side = max(width, height)
    result = Image.new(image.mode, (side, side), background)
    result.paste(image, ((side - width) // 2, (side - height) // 2))
    return result


def load_reference_model(model_dir: str, adapter_dir: str | None):
    """The model as LLaVA's loader leaves it: float32 here (CPU), the adapter merged by peft."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32).eval()
    if adapter_dir is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter_dir).merge_and_unload().eval()
    return model, AutoProcessor.from_pretrained(model_dir)


def expert_reference(model, processor, caption: str, image) -> dict:
    """One caption's EXPERT score by the literal procedure: ``{"text", "number", "score"}`` (``score`` NaN
    where the authors' script raises or skips the item)."""
    import torch

    tokenizer = processor.tokenizer
    rate2token = {s: tokenizer.encode(str(s))[-1] for s in range(10)}
    caption = " ".join(caption.split())
    prompt = llava_v0_prompt([("Human", "<image>\n" + SCORE_PROMPT.format(caption)), ("Assistant", None)])
    mean = processor.image_processor.image_mean
    image = expand2square(image.convert("RGB"), tuple(int(x * 255) for x in mean))
    inputs = processor(text=[prompt], images=[[image]], return_tensors="pt")
    with torch.inference_mode():
        output_dict = model.generate(
            **inputs,
            do_sample=False,
            num_beams=1,
            max_new_tokens=512,
            use_cache=True,
            output_scores=True,
            return_dict_in_generate=True,
            stop_strings=["###"],
            tokenizer=tokenizer,
            pad_token_id=tokenizer.pad_token_id,
        )
    generated = output_dict.sequences[:, inputs["input_ids"].shape[1] :]
    bos = torch.full((1, 1), tokenizer.bos_token_id, dtype=generated.dtype)
    output_ids = torch.cat([bos, generated], dim=1)
    outputs = tokenizer.batch_decode(output_ids, skip_special_tokens=True)[0].strip()
    kept = re.sub(r"\.+$", "", re.sub(r"^\.+", "", re.sub(r"[^\d\.]", "", outputs)))
    try:
        number = float(kept)
    except ValueError:
        return {"text": outputs, "number": math.nan, "score": math.nan}
    if number < 0 or number > 1:
        return {"text": outputs, "number": math.nan, "score": math.nan}
    try:
        score = _smoothed(number, output_ids, output_dict.scores, rate2token)
    except (IndexError, TypeError, ValueError):  # where their script fails on the item
        return {"text": outputs, "number": number, "score": math.nan}
    return {"text": outputs, "number": number, "score": float(score)}


def _probs(scores, position):
    import torch

    return torch.nn.functional.softmax(scores[position], dim=-1)[0]


def _smoothed(number, output_ids, scores, rate2token):
    generated = output_ids[0, 1:]
    if number < 1.0:
        decimals = str(number)
        first = int(decimals[decimals.index(".") + 1])
        where = (generated == rate2token[first]).nonzero().squeeze()
        if len(where.shape) > 0:  # several: their script skips the leading "0" for a first decimal 0
            where = where[1] if first == 0 else where[0]
        probs = _probs(scores, where)
        score = 0.0
        for rate, token in rate2token.items():
            score += probs[token] * rate * 0.1
        if len(decimals) > 3:
            second = int(decimals[decimals.index(".") + 2])
            where = (generated == rate2token[second]).nonzero().squeeze()
            if len(where.shape) > 0:
                where = where[1]
            probs = _probs(scores, where)
            for rate, token in rate2token.items():
                score += probs[token] * rate * 0.01
        return score
    where = (generated == rate2token[1]).nonzero().squeeze()
    probs = _probs(scores, where)
    return 0.9 * probs[rate2token[0]] + probs[rate2token[1]]
