"""A tiny VLM checked with plain ``transformers`` alone, before any judge code runs on it: it loads through the
Auto classes, a left-padded batch of two prompts with one image each (images nested per prompt, as every
processor reads them) gives each prompt the answer distribution it gets alone, and it generates.

>>> import tempfile
>>> from mmjudge.tiny_models import tiny_vlm
>>> report = check_with_transformers(tiny_vlm(tempfile.mkdtemp(), "llava"))
>>> report.batch_error < 1e-6, report.generated
(True, 3)
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TransformersCheck:
    """What :func:`check_with_transformers` saw: the model class, the largest difference between a
    batched and a one-prompt next-token distribution, how many tokens ``generate`` added per prompt, and
    the processor's output names (per-token inputs such as ``token_type_ids`` show up here)."""

    model_class: str
    batch_error: float
    generated: int
    input_names: tuple


def check_with_transformers(path: str, new_tokens: int = 3) -> TransformersCheck:
    """Load the model folder ``path`` with ``AutoProcessor`` + ``AutoModelForImageTextToText`` and run two
    prompts about two images of different shapes, batched and one at a time, then ``generate``."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(path)
    processor.tokenizer.padding_side = "left"
    model = AutoModelForImageTextToText.from_pretrained(path).eval()
    images = [Image.new("RGB", (60, 40), (200, 30, 30)), Image.new("RGB", (40, 70), (20, 130, 230))]
    texts = [
        processor.apply_chat_template(
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image"},
                        {"type": "text", "text": f"Rate caption {i}: a square" + " on grass" * 3 * i},
                    ],
                }
            ],
            add_generation_prompt=True,
            tokenize=False,
        )
        for i in range(2)
    ]
    batch = processor(text=texts, images=[[image] for image in images], return_tensors="pt", padding=True)
    with torch.no_grad():
        together = torch.softmax(model(**batch).logits[:, -1].float(), dim=-1)
        error = 0.0
        for k, (text, image) in enumerate(zip(texts, images)):
            alone = processor(text=[text], images=[[image]], return_tensors="pt")
            error = max(
                error, float((torch.softmax(model(**alone).logits[0, -1].float(), -1) - together[k]).abs().max())
            )
        out = model.generate(**batch, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
    return TransformersCheck(type(model).__name__, error, out.shape[1] - batch["input_ids"].shape[1], tuple(batch))
