r"""The head-to-head prompt set: which of two texts is better on one criterion (versioned TOML data).

A pairwise prompt file (``mmjudge/prompts/harmonic_eval_pairwise.toml``) holds one template per criterion
(``[comparisons.<criterion>]``: ``template``), the blocks showing the two texts per task (``[inputs]``:
``ic``, ``vqa`` … and ``text_only`` for criteria that see neither image nor question), the
answer ``choices`` (first slot better, second slot better, tie), the ``closing`` line of the user turn and
the teacher-forced ``answer_prefix``. The task words come from the rating prompt set it is paired with, so
both describe a task alike.

>>> from mmjudge.prompts import load_prompt_set
>>> pairs = load_pair_prompts("harmonic_eval_pairwise", load_prompt_set("harmonic_eval"))
>>> pairs.id, pairs.choices
('harmonic_eval_pairwise@1', ('A', 'B', 'C'))
>>> print("\n".join(pairs.render("fluency", "ic", "A dog runs.", "A dog run.", sees_image=False).splitlines()[-4:]))
Text A: A dog runs.
Text B: A dog run.
<BLANKLINE>
Verdict:
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.prompts import PromptSet, _fill, prompt_path, read_toml

TEXT_ONLY = "text_only"


@dataclass(frozen=True)
class PairPrompts:
    """A loaded pairwise prompt set, bound to the rating prompt set whose task words it uses."""

    name: str
    version: str
    choices: tuple[str, ...]
    closing: str
    answer_prefix: str
    explain_turn: str
    inputs: dict[str, str]
    comparisons: dict[str, dict[str, Any]]
    tasks: dict[str, dict[str, str]]

    @property
    def id(self) -> str:
        """``name@version``, as it appears in signatures."""
        return f"{self.name}@{self.version}"

    @property
    def criteria(self) -> list[str]:
        return list(self.comparisons)

    def check_criteria(self, criteria: Sequence[str], where: str) -> None:
        """Every criterion of ``criteria`` has a comparison template that fills with every task's words, or
        one line naming the first that does not."""
        missing = [c for c in criteria if c not in self.comparisons]
        if missing:
            raise ValueError(
                f"The pairwise prompt set {self.id} has no comparison for criterion {missing[0]!r} ({where}); "
                f"it compares {', '.join(self.comparisons)}. Add a [comparisons.{missing[0]}] table to a copy of "
                f"{self.name}.toml and pass it to HarmonicEval.pairwise() (CLI: --pairwise-prompts)."
            )
        for criterion in criteria:  # fail here, not in the middle of a run
            for task in self.tasks:
                for sees in (True, False):
                    self.render(criterion, task, "x", "y", "q", sees_image=sees)

    def render(
        self, criterion: str, task: str, text_a: str, text_b: str, question: str | None = None, sees_image: bool = True
    ) -> str:
        """The user prompt comparing ``text_a`` (first slot) with ``text_b`` (second slot) on ``criterion``;
        a criterion that does not see the image (``sees_image=False``) shows the two texts alone."""
        spec = self.comparisons[criterion]
        words = dict(self.tasks[task])
        words.update(text_a=text_a, text_b=text_b, question=question if question is not None else "")
        block = self.inputs[task if sees_image else TEXT_ONLY]
        head = _fill(spec["template"], words, f"{self.name}: comparisons.{criterion}.template")
        tail = _fill(block, words, f"{self.name}: inputs.{task}")
        return f"{head}\n\n{tail}" + (f"\n\n{self.closing}" if self.closing else "")


def load_pair_prompts(name_or_path: str | Path, rating: PromptSet) -> PairPrompts:
    """The pairwise prompt set ``name_or_path`` (a bundled name or a ``.toml`` path) with the task words of
    the rating prompt set ``rating`` (:meth:`PairPrompts.check_criteria` fills the templates in use once, so a
    broken one fails before any judge call)."""
    path = prompt_path(name_or_path)
    if not path.is_file():
        raise ValueError(f"Unknown pairwise prompt set {str(name_or_path)!r}: no file {path}.")
    data = read_toml(path)
    try:
        prompts = PairPrompts(
            name=str(data.get("name", path.stem)),
            version=str(data["version"]),
            choices=tuple(str(c) for c in data["choices"]),
            closing=str(data.get("closing", "")),
            answer_prefix=str(data.get("answer_prefix", "")),
            explain_turn=str(data.get("explain_turn", "Why? Tell me the reason.")),
            inputs={str(k): str(v) for k, v in data["inputs"].items()},
            comparisons={str(k): dict(v) for k, v in data["comparisons"].items()},
            tasks=rating.tasks,
        )
    except KeyError as err:
        raise ValueError(f"{path}: pairwise prompt file lacks the required key {err}.") from None
    if len(prompts.choices) != 3 or len(set(prompts.choices)) != 3:
        raise ValueError(
            f"{path}: expected three distinct `choices` (first better, second better, tie), but got {prompts.choices}."
        )
    for block in (*rating.tasks, TEXT_ONLY):
        if block not in prompts.inputs:
            raise ValueError(f"{path}: [inputs] has no block {block!r} (one per task, and {TEXT_ONLY!r}).")
    for criterion, spec in prompts.comparisons.items():
        if "template" not in spec:
            raise ValueError(f"{path}: comparisons.{criterion} has no template.")
    return prompts
