"""Named conversation formats: render a chat as the exact prompt text some checkpoints were trained on.

Most judges render prompts with the processor's own chat template. Some published metrics used a
different, named format; FLEUR, for instance, prompts LLaVA-1.5 with the original repository's
``llava_v1`` conversation (a system sentence, ``USER:`` / ``ASSISTANT:`` roles, turns separated by
``" "`` and ``"</s>"``), which the ``llava-hf`` chat template does not reproduce (it has no system
sentence). A :class:`~mmjudge.judges.base.RatingRequest` whose ``conversation`` names a format here is
rendered by that format instead of the chat template.

>>> from mmjudge.judges.requests import Turn
>>> render_conversation("llava_v1", [Turn("user", "Rate it.")], image_token="<image>")[-40:]
'tions. USER: <image>\\nRate it. ASSISTANT:'
>>> render_conversation("llava_v1", [Turn("user", "Rate."), Turn("assistant", "0.8"), Turn("user", "Why?")],
...                     image_token=None)[-51:]
'USER: Rate. ASSISTANT: 0.8</s>USER: Why? ASSISTANT:'

LLaVA's older ``llava_v0`` format (``"###"`` after the system sentence and after every turn, ``Human:`` /
``Assistant:`` roles) is the one EXPERT's released script runs (it infers ``llava_v0`` from its model's name):

>>> render_conversation("llava_v0", [Turn("user", "Rate."), Turn("assistant", "0.8</s>"), Turn("user", "Why?")],
...                     image_token="<image>")[-71:]
'###Human: <image>\\nRate.###Assistant: 0.8</s>###Human: Why?###Assistant:'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mmjudge.judges.requests import Turn

LLAVA_V1_SYSTEM = (
    "A chat between a curious human and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the human's questions."
)

Renderer = Callable[[Sequence[Turn], str | None], str]


def _llava_v1(turns: Sequence[Turn], image_token: str | None) -> str:
    # LLaVA's "two separators" style: user turns end with " ", assistant turns with "</s>", and the
    # open assistant turn at the end is "ASSISTANT:" with no trailing space.
    text = LLAVA_V1_SYSTEM + " "
    for k, turn in enumerate(turns):
        body = turn.text
        if k == 0 and image_token:
            body = f"{image_token}\n{body}"
        if turn.role == "user":
            text += f"USER: {body} "
        elif turn.role == "assistant":
            text += f"ASSISTANT: {body}</s>"
        else:
            raise ValueError(f"The llava_v1 conversation has no role {turn.role!r}; expected 'user' or 'assistant'.")
    return text + "ASSISTANT:"


def _llava_v0(turns: Sequence[Turn], image_token: str | None) -> str:
    # LLaVA's "single separator" style (SeparatorStyle.SINGLE, sep "###"): the system sentence and every
    # turn end with "###"; a turn is "<Role>: <text>", the open assistant turn "Assistant:" (no space).
    text = LLAVA_V1_SYSTEM + "###"
    roles = {"user": "Human", "assistant": "Assistant"}
    for k, turn in enumerate(turns):
        if turn.role not in roles:
            raise ValueError(f"The llava_v0 conversation has no role {turn.role!r}; expected 'user' or 'assistant'.")
        body = f"{image_token}\n{turn.text}" if k == 0 and image_token else turn.text
        text += f"{roles[turn.role]}: {body}###"
    return text + "Assistant:"


CONVERSATIONS: dict[str, Renderer] = {"llava_v0": _llava_v0, "llava_v1": _llava_v1}


def render_conversation(name: str, turns: Sequence[Turn], image_token: str | None = None) -> str:
    """The prompt text of ``turns`` in conversation format ``name``, ending with the open assistant turn.
    ``image_token`` is the model's image placeholder, put before the first turn's text (``None``: no image)."""
    if name not in CONVERSATIONS:
        raise ValueError(f"Unknown conversation format {name!r}. Expected one of: {', '.join(sorted(CONVERSATIONS))}.")
    return CONVERSATIONS[name](turns, image_token)
