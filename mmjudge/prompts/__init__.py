r"""Prompt sets: criteria and per-task wording as versioned TOML data files.

A prompt set names its ``version`` (part of every signature), its rating ``scale``, the follow-up
turn used for explanations, per-task words (``[tasks.<task>]``) and per-criterion templates
(``[criteria.<name>]`` with ``template``, ``sees_image`` and optionally its own ``input``), the line
closing the user turn (``closing``) and the teacher-forced start of the answer (``answer_prefix``). Pass a
bundled name (``"harmonic_eval"``) or the path of your own ``.toml`` file for custom criteria.

>>> from mmjudge.prompts import load_prompt_set
>>> ps = load_prompt_set("harmonic_eval")
>>> ps.criteria
['correctness', 'completeness', 'clarity', 'fluency', 'conciseness']
>>> print("\n".join(ps.render("fluency", "ic", text="A dog runs.").splitlines()[-3:]))
Text: A dog runs.
<BLANKLINE>
Score:
"""

from __future__ import annotations

import functools
import string

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[no-redef]
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def available_prompt_sets() -> list[str]:
    """Names of the bundled criterion prompt sets (files with ``[criteria.*]`` tables)."""
    return sorted(p.stem for p in HERE.glob("*.toml") if "[criteria." in p.read_text(encoding="utf-8"))


def load_prompt_file(name: str) -> dict[str, Any]:
    """The raw data of bundled prompt file ``name`` (e.g. FLEUR's prompts, which are not a criterion set).

    >>> load_prompt_file("fleur")["version"]
    '1'
    """
    path = HERE / f"{name}.toml"
    if not path.is_file():
        raise ValueError(f"No bundled prompt file {name!r} in {HERE}.")
    data = read_toml(path)
    if "version" not in data:
        raise ValueError(f"{path}: prompt files must carry a `version`.")
    return data


def prompt_path(name_or_path: str | Path) -> Path:
    """Where prompt set ``name_or_path`` lives: a ``.toml`` path as given, else the bundled file of that name
    (either may not exist: the loader says so in its own words).

    >>> prompt_path("harmonic_eval").name, str(prompt_path("my/prompts.toml"))
    ('harmonic_eval.toml', 'my/prompts.toml')
    """
    path = Path(name_or_path)
    return path if path.suffix == ".toml" else HERE / f"{name_or_path}.toml"


def read_toml(path: Path) -> dict[str, Any]:
    with open(path, "rb") as f:
        return tomllib.load(f)


# Keys of a [tasks.<task>] table that describe the task instead of filling prompt placeholders.
TASK_INFO_KEYS = ("label", "text_name", "needs")
TASK_INPUTS = ("question", "box")  # what a task's `needs` may name


@dataclass(frozen=True)
class TaskInfo:
    """What a task is, for front doors: ``label`` (its name on pages), ``text_name`` (what the judged text
    is called: caption, answer …) and ``needs`` (inputs it requires besides text and image)."""

    name: str
    label: str
    text_name: str = "text"
    needs: tuple[str, ...] = ()


@dataclass
class PromptSet:
    name: str
    version: str
    scale: list[str]
    explain_turn: str
    answer_prefix: str
    closing: str
    tasks: dict[str, dict[str, str]]
    criteria_specs: dict[str, dict[str, Any]]
    task_info: dict[str, TaskInfo] = dataclass_field(default_factory=dict)

    @property
    def criteria(self) -> list[str]:
        return list(self.criteria_specs)

    @property
    def id(self) -> str:
        """``name@version``, as it appears in signatures."""
        return f"{self.name}@{self.version}"

    def tasks_needing(self, what: str) -> tuple[str, ...]:
        """The tasks whose ``needs`` name ``what`` (``"question"``, ``"box"``).

        >>> load_prompt_set("harmonic_eval").tasks_needing("question")
        ('vqa', 'vdu')
        """
        return tuple(t for t, info in self.task_info.items() if what in info.needs)

    def sees_image(self, criterion: str) -> bool:
        return bool(self.criteria_specs[criterion].get("sees_image", True))

    def check_task(self, task: str) -> str:
        key = str(task).lower()
        if key not in self.tasks:
            raise ValueError(f"Unknown task {task!r}. Expected one of: {', '.join(self.tasks)}.")
        return key

    def check_criteria(self, criteria: list[str] | None) -> list[str]:
        if criteria is None:
            return self.criteria
        if isinstance(criteria, str):
            criteria = [criteria]
        chosen = [str(c).lower() for c in criteria]
        unknown = [c for c in chosen if c not in self.criteria_specs]
        if unknown:
            raise ValueError(f"Unknown criterion {unknown[0]!r}. Expected some of: {', '.join(self.criteria)}.")
        if not chosen or len(set(chosen)) != len(chosen):
            raise ValueError(f"Expected a non-empty list of distinct criteria, but got {criteria!r}.")
        return chosen

    def render(self, criterion: str, task: str, text: str, question: str | None = None) -> str:
        """The full user prompt for ``criterion`` on ``task`` with the target ``text`` filled in."""
        spec = self.criteria_specs[criterion]
        words = dict(self.tasks[self.check_task(task)])
        input_template = spec.get("input", words.get("input", "Text: {text}"))
        words.update(text=text, question=question if question is not None else "")
        head = _fill(spec["template"], words, f"{self.name}: criteria.{criterion}.template")
        tail = _fill(input_template, words, f"{self.name}: input of {criterion}/{task}")
        return f"{head}\n\n{tail}" + (f"\n\n{self.closing}" if self.closing else "")


def _task_info(name: str, table: Mapping[str, Any], path: Path) -> TaskInfo:
    needs = table.get("needs", [])
    if isinstance(needs, str) or any(n not in TASK_INPUTS for n in needs):
        raise ValueError(f"{path}: tasks.{name}.needs must be a list of {TASK_INPUTS}, but got {needs!r}.")
    return TaskInfo(name, str(table.get("label", name)), str(table.get("text_name", "text")), tuple(needs))


def _fill(template: str, words: Mapping[str, str], where: str) -> str:
    # Fill placeholders without letting braces inside user text be re-interpreted.
    parts = []
    for literal, field in _parsed(template):
        parts.append(literal)
        if field is not None:
            if field not in words:
                raise ValueError(f"{where}: unknown placeholder {{{field}}}.")
            parts.append(str(words[field]))
    return "".join(parts)


@functools.lru_cache(maxsize=256)
def _parsed(template: str) -> tuple[tuple[str, str | None], ...]:
    # A prompt set has a few templates, each filled for every item: parse each once.
    return tuple((literal, field) for literal, field, _, _ in string.Formatter().parse(template))


def load_prompt_set(name_or_path: str | Path = "harmonic_eval") -> PromptSet:
    """Load a bundled prompt set by name or any ``.toml`` prompt file by path."""
    path = prompt_path(name_or_path)
    if not path.is_file():
        bundled = ", ".join(available_prompt_sets())
        raise ValueError(f"Unknown prompt set {str(name_or_path)!r}: no file {path}. Bundled: {bundled}.")
    data = read_toml(path)
    try:
        criteria = data["criteria"]
        ps = PromptSet(
            name=str(data.get("name", path.stem)),
            version=str(data["version"]),
            scale=[str(s) for s in data.get("scale", ["1", "2", "3", "4", "5"])],
            explain_turn=str(data.get("explain_turn", "Why? Tell me the reason.")),
            answer_prefix=str(data.get("answer_prefix", "")),
            closing=str(data.get("closing", "")),
            tasks={
                k: {kk: str(vv) for kk, vv in v.items() if kk not in TASK_INFO_KEYS} for k, v in data["tasks"].items()
            },
            criteria_specs={k: dict(v) for k, v in criteria.items()},
            task_info={k: _task_info(k, v, path) for k, v in data["tasks"].items()},
        )
    except KeyError as err:
        raise ValueError(f"{path}: prompt file lacks the required key {err}.") from None
    for c, spec in ps.criteria_specs.items():
        if "template" not in spec:
            raise ValueError(f"{path}: criteria.{c} has no template.")
    for task in ps.tasks:  # fail at load time, not in the middle of a run
        for c in ps.criteria:
            ps.render(c, task, text="x", question="q")
    return ps
