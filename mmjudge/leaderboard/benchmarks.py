"""The benchmarks a leaderboard accepts submissions for: data-driven, one registry for every track.

A :class:`Benchmark` names its track, its item ids (what an upload must cover exactly) and, lazily,
what the worker needs: the inputs a model answered (Models track: ``id``, ``task``, ``image``,
``question``, ``box``) or the human judgments (Metrics track, :class:`~mmjudge.human_judgments.HumanJudgments`).

An Arena-track benchmark is a Models-track one plus its **anchor systems**: each anchor's ``{id, text}``
outputs on the same inputs, which every submission meets head to head (:meth:`Benchmark.anchors`).

Real benchmarks come from the engine's dataset loaders (``mmjudge.load_dataset``): configure them with
:func:`configure` (name, track, ``data_dir``; Arena: ``anchors``, name → outputs file), e.g. MMHE's
inputs for the Models and Arena tracks and MMHE, LongCap-Arena or the classic caption sets for the
Metrics track. Without data files this machine has only the four **demo** benchmarks, made here:
``demo-inputs`` (8 drawn images over IC, VQA, VDU, REG), ``demo-arena`` (the same inputs with three
anchor systems whose texts are written here, :data:`DEMO_ANCHORS`), ``demo-judgments`` (24 captions
with synthetic ratings — made up to exercise the plumbing; they are not human judgments and the figures
they give mean nothing) and ``demo-judge-pairs`` (the Judges track: 24 pairs of answers written in
VL-RewardBench's layout, :mod:`mmjudge.leaderboard.tracks.judges`).

>>> demo = get_benchmark("demo-inputs")
>>> demo.track, demo.tasks, demo.ids[:3]
('models', ['ic', 'vqa', 'vdu', 'reg'], ['demo-ic-1', 'demo-ic-2', 'demo-vqa-1'])
>>> arena = get_benchmark("demo-arena")
>>> arena.track, arena.ids == demo.ids
('arena', True)
>>> for name, texts in arena.anchors().items():
...     print(name, "|", texts[0]["text"])
anchor-plain | A red circle.
anchor-clear | A red circle clearly.
anchor-background | A red circle on a plain white background.
>>> hj = get_benchmark("demo-judgments").judgments()
>>> len(hj.items), len(hj.ratings), hj.criteria[:2]
(24, 360, ['correctness', 'completeness'])
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from mmjudge.human_judgments import HumanJudgments
from mmjudge.prompts import load_prompt_set

# The Models track is scored by HarmonicEval: its prompt set says which tasks and criteria there are
# (and what each task needs), so the board never types them again.
PROMPTS = load_prompt_set("harmonic_eval")
CRITERIA = PROMPTS.criteria
MODEL_TASKS = list(PROMPTS.tasks)
# What a participant is given for each item (the inputs download). Metrics track: the texts to score
# and what a metric may use — never the human judgments the submission is compared with.
MODEL_FIELDS = ("id", "task", "image", "question", "box")
METRIC_FIELDS = ("id", "task", "text", "image", "question", "box", "references", "image_path", "split")


@dataclass
class Benchmark:
    """One benchmark of one track.

    Attributes:
        name: registry name (shown on the board).
        track: the track it belongs to (``"models"``, ``"metrics"``, ``"arena"``, ``"judges"``).
        title / description: for the board.
        ids: the item ids an upload must cover exactly.
        tasks: the tasks of the items, in order.
        demo: True for the project-made demo benchmarks.
    """

    name: str
    track: str
    title: str
    description: str
    ids: list[str]
    tasks: list[str]
    demo: bool = False
    _inputs: Callable[[], list[dict]] | None = field(default=None, repr=False)
    _judgments: Callable[[], HumanJudgments] | None = field(default=None, repr=False)
    _extra: Callable[[], dict[str, dict]] | None = field(
        default=None, repr=False
    )  # id -> public columns the judgments lack
    _anchors: Callable[[], dict[str, list[dict]]] | None = field(default=None, repr=False)

    def inputs(self) -> list[dict]:
        """Models and Arena tracks: one dict per item (``id``, ``task``, ``image``, ``question``, ``box``)."""
        if self._inputs is None:
            raise ValueError(f"Benchmark {self.name!r} is a {self.track}-track benchmark; it has no model inputs.")
        return self._inputs()

    def anchors(self) -> dict[str, list[dict]]:
        """Arena track: each anchor system's outputs, ``name → [{id, text}]`` in the benchmark's order."""
        if self._anchors is None:
            raise ValueError(f"Benchmark {self.name!r} is a {self.track}-track benchmark; it has no anchor systems.")
        return self._anchors()

    def judgments(self) -> HumanJudgments:
        """Metrics track: the human judgments the submitted scores are compared with."""
        if self._judgments is None:
            raise ValueError(f"Benchmark {self.name!r} is a {self.track}-track benchmark; it has no human judgments.")
        return self._judgments()

    def public_items(self) -> list[dict]:
        """What a participant gets for each item, in the benchmark's order (the inputs download): for model
        inputs (Models, Arena) :data:`MODEL_FIELDS`; for human judgments (Metrics) :data:`METRIC_FIELDS` (the
        items' texts and what a metric may use, plus ``image_path`` where the images are not shipped) — never
        a rating, never an anchor's text."""
        if self._inputs is not None:
            return [{k: it.get(k) for k in MODEL_FIELDS} for it in self.inputs()]
        extra = self._extra() if self._extra is not None else {}
        return [
            {k: v for k, v in {**it, **extra.get(it["id"], {})}.items() if k in METRIC_FIELDS and v is not None}
            for it in self.judgments().items
        ]


@dataclass(frozen=True)
class _Registered:
    track: str
    factory: Callable[[], Benchmark]
    key: Any = None  # what the factory was made from (configure's entry): re-registering it is a no-op


_REGISTRY: dict[str, _Registered] = {}
_BUILT: dict[str, Benchmark] = {}
_LOCK = threading.RLock()  # a factory may look up another benchmark


def register(name: str, track: str, factory: Callable[[], Benchmark], key: Any = None) -> None:
    """Add a benchmark of ``track`` (``factory`` builds it on first use, so listing the benchmarks of
    a track loads no data). Registering ``name`` again with the same non-None ``key`` keeps the built
    benchmark; anything else replaces it (and only its own built copy is dropped)."""
    from mmjudge.leaderboard.tracks import TRACKS

    if track not in TRACKS:
        raise ValueError(f"benchmark {name!r}: unknown track {track!r}; the board has {', '.join(TRACKS.names())}.")
    with _LOCK:
        previous = _REGISTRY.get(name)
        if previous is not None and key is not None and (previous.track, previous.key) == (track, key):
            return
        _REGISTRY[name] = _Registered(track, factory, key)
        _BUILT.pop(name, None)


def available_benchmarks(track: str | None = None) -> list[str]:
    """Registered names (of one track when given), in registration order."""
    return [n for n, r in _REGISTRY.items() if track in (None, r.track)]


def get_benchmark(name: str) -> Benchmark:
    """The benchmark ``name`` (built once); ``ValueError`` naming the known ones otherwise."""
    with _LOCK:
        registered = _REGISTRY.get(name)
        if registered is None:
            raise ValueError(f"Unknown benchmark {name!r}; available: {', '.join(_REGISTRY) or 'none'}.")
        if name not in _BUILT:
            _BUILT[name] = registered.factory()
        return _BUILT[name]


def configure(entries: list[dict]) -> None:
    """Register benchmarks read by the engine's dataset loaders, e.g.
    ``[{"name": "mmhe", "track": "models", "data_dir": "~/data/mmhe"}, {"name": "mmhe", "track": "metrics", …}]``.
    ``name`` is the loader (:func:`mmjudge.load_dataset`); every other key but ``track`` and ``benchmark``
    goes to it (``data_dir``, ``split``, ``expected_counts``, ``cache_dir`` …). The board's name is
    ``benchmark`` when given (two splits of one loader: ``longcap-testA``, ``longcap-testB``), else
    ``<name>`` for the metrics track and ``<name>-inputs`` for the models track.
    Idempotent: configuring the same entries again (every app and worker start) keeps what was loaded."""
    from mmjudge.leaderboard.tracks import get_track

    for entry in entries:
        name = entry["name"]
        try:
            track = get_track(entry.get("track", "metrics"))
        except ValueError as err:
            raise ValueError(f"benchmark {name!r}: {err}") from None
        options = {k: v for k, v in entry.items() if k not in ("name", "track", "benchmark")}
        key = json.dumps([name, options], sort_keys=True, default=str)
        board = entry.get("benchmark") or f"{name}{track.board_name_suffix}"
        register(board, track.name, lambda t=track, n=name, b=board, o=options: t.load_benchmark(n, o, b), key=key)


# ------------------------------------------------------------------------------ from the loaders
def _loader_judgments(name: str, options: dict, board: str | None = None) -> Benchmark:
    from mmjudge.datasets import human_judgments, load_dataset, rows_of

    dataset = load_dataset(name, **options)
    hj = human_judgments(name, dataset)
    # Where the benchmark does not ship its images (Flickr8k: not redistributable), its upstream image
    # path lets a participant find them.
    paths = {row["id"]: {"image_path": row["image_path"]} for _, row in rows_of(dataset) if row.get("image_path")}
    tasks = list(dict.fromkeys(str(it.get("task") or "all") for it in hj.items))
    board = board or name
    split = f", split {options['split']}" if options.get("split") else ""
    return Benchmark(
        board,
        "metrics",
        board,
        f"human judgments of {name}{split} (mmjudge.load_dataset)",
        hj.ids(),
        tasks,
        _judgments=lambda: hj,
        _extra=lambda: paths,
    )


def _loader_inputs(name: str, options: dict, board: str | None = None) -> Benchmark:
    """One input per instance of the benchmark (MMHE: the image, question and box the three candidates answered)."""
    from mmjudge.datasets import load_dataset, rows_of

    inputs: dict[str, dict] = {}
    for _split, row in rows_of(load_dataset(name, **options)):
        task = str(row.get("task") or "ic").lower()
        key = f"{name}-{task}-{row.get('instance_id', row.get('id'))}"
        if key not in inputs:
            inputs[key] = {
                "id": key,
                "task": task,
                "image": row.get("image"),
                "question": row.get("question") or None,
                "box": row.get("box") or None,
            }
    items = list(inputs.values())
    board = board or f"{name}-inputs"
    return Benchmark(
        board,
        "models",
        f"{name} inputs",
        f"the inputs of {name}; submit one text per id",
        [it["id"] for it in items],
        list(dict.fromkeys(it["task"] for it in items)),
        _inputs=lambda: items,
    )


# --------------------------------------------------------------------------------- demo benchmarks
_SHAPES = [
    ("red", "circle"),
    ("blue", "square"),
    ("green", "triangle"),
    ("orange", "circle"),
    ("purple", "square"),
    ("black", "triangle"),
    ("yellow", "circle"),
    ("teal", "square"),
]


def demo_image(color: str, shape: str, size: int = 64):
    """A drawn picture: one coloured shape on white (PIL)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    box = (size // 4, size // 4, 3 * size // 4, 3 * size // 4)
    if shape == "circle":
        draw.ellipse(box, fill=color)
    elif shape == "square":
        draw.rectangle(box, fill=color)
    else:
        draw.polygon([(size // 2, size // 4), (size // 4, 3 * size // 4), (3 * size // 4, 3 * size // 4)], fill=color)
    return img


_DEMO_QUESTIONS = ["What colour is the shape?", "What shape does the page show?"]


def _demo_inputs() -> list[dict]:
    items, asking = [], PROMPTS.tasks_needing("question")
    for t, task in enumerate(MODEL_TASKS):
        needs = PROMPTS.task_info[task].needs
        for k in (1, 2):
            color, shape = _SHAPES[(2 * t + k - 1) % len(_SHAPES)]
            item: dict[str, Any] = {
                "id": f"demo-{task}-{k}",
                "task": task,
                "image": demo_image(color, shape),
                "question": None,
                "box": None,
            }
            if "question" in needs:
                item["question"] = _DEMO_QUESTIONS[asking.index(task) % len(_DEMO_QUESTIONS)]
            if "box" in needs:
                item["box"] = [16.0, 16.0, 32.0, 32.0]
            items.append(item)
    return items


_DEMO_WORDINGS = ["", " clearly", " on a plain white background", " in the centre of the picture"]
# The demo Arena's anchor systems: name -> the wording of demo_outputs its texts use (texts written here).
DEMO_ANCHORS = {"anchor-plain": 0, "anchor-clear": 1, "anchor-background": 2}


def demo_outputs(quality: int = 0) -> list[dict]:
    """A valid Models- or Arena-track upload for ``demo-inputs`` / ``demo-arena`` (``quality`` varies the
    wording), as ``{id, text}``."""
    out = []
    for t, task in enumerate(MODEL_TASKS):
        for k in (1, 2):
            color, shape = _SHAPES[(2 * t + k - 1) % len(_SHAPES)]
            wording = _DEMO_WORDINGS[quality % len(_DEMO_WORDINGS)]
            out.append({"id": f"demo-{task}-{k}", "text": f"A {color} {shape}{wording}."})
    return out


def _demo_inputs_benchmark() -> Benchmark:
    items = _demo_inputs()
    return Benchmark(
        "demo-inputs",
        "models",
        "Demo inputs (IC, VQA, VDU, REG)",
        "8 drawn images, two per MMHE task; made for the demo (stand-in for the MMHE inputs)",
        [it["id"] for it in items],
        list(MODEL_TASKS),
        demo=True,
        _inputs=lambda: items,
    )


def _demo_arena_benchmark() -> Benchmark:
    inputs = get_benchmark("demo-inputs")
    anchors = {name: demo_outputs(wording) for name, wording in DEMO_ANCHORS.items()}
    return replace(
        inputs,
        name="demo-arena",
        track="arena",
        title="Demo arena (IC, VQA, VDU, REG; three anchor systems)",
        description=f"the 8 demo inputs; every submission meets the anchor systems {', '.join(DEMO_ANCHORS)} "
        "head to head (their texts were written for the demo)",
        _anchors=lambda: anchors,
    )


def _demo_judgments() -> HumanJudgments:
    rng = random.Random(0)
    items, ratings, choices = [], [], []
    for task in MODEL_TASKS:
        for instance in range(2):
            group = []
            for cand in range(3):
                item_id = f"demo-{task}-{instance}-{cand}"
                group.append(item_id)
                quality = rng.uniform(1.5, 4.5)
                items.append(
                    {
                        "id": item_id,
                        "task": task,
                        "text": f"candidate {cand} of {task} instance {instance}",
                        "quality": quality,
                    }
                )
                for criterion in CRITERIA:
                    for annotator in range(3):
                        score = min(5.0, max(1.0, round(quality + rng.uniform(-1, 1))))
                        ratings.append(
                            {
                                "id": item_id,
                                "task": task,
                                "criterion": criterion,
                                "score": float(score),
                                "annotator": str(annotator),
                            }
                        )
            best = max(group, key=lambda i: next(it["quality"] for it in items if it["id"] == i))
            choices += [
                {
                    "group": f"demo-{task}-{instance}",
                    "task": task,
                    "candidates": group,
                    "annotator": str(a),
                    "best": best,
                }
                for a in range(3)
            ]
    return HumanJudgments(
        name="demo-judgments",
        items=items,
        ratings=ratings,
        choices=choices,
        correlation="tau_b",
        criteria=list(CRITERIA),
        metadata={"synthetic": True},
    )


def demo_scores(noise: float = 0.0, seed: int = 0) -> list[dict]:
    """A valid Metrics-track upload for ``demo-judgments``: the synthetic quality plus ``noise``."""
    rng = random.Random(seed)
    return [{"id": it["id"], "score": round(it["quality"] + rng.gauss(0, noise), 6)} for it in _demo_judgments().items]


def _demo_judgments_benchmark() -> Benchmark:
    hj = _demo_judgments()
    return Benchmark(
        "demo-judgments",
        "metrics",
        "Demo judgments (synthetic)",
        "24 candidate texts with SYNTHETIC 1-5 ratings and best-of-three choices; figures mean nothing",
        hj.ids(),
        list(MODEL_TASKS),
        demo=True,
        _judgments=lambda: hj,
    )


register("demo-inputs", "models", _demo_inputs_benchmark)
register("demo-judgments", "metrics", _demo_judgments_benchmark)
register("demo-arena", "arena", _demo_arena_benchmark)


def _demo_judge_pairs_benchmark() -> Benchmark:
    from mmjudge.leaderboard.tracks import get_track

    return get_track("judges").load_benchmark("vl_rewardbench", {"demo": True}, "demo-judge-pairs")


register("demo-judge-pairs", "judges", _demo_judge_pairs_benchmark)
