"""MMHE: Multi-task Multi-criteria Human Evaluation (Ohi et al.). 4 tasks × 100 instances × 3 candidates,
each rated 1–5 by three annotators on five criteria (18,000 ratings), plus each annotator's best-of-three.

One row per candidate (so a metric's ``{"id", "score"}`` lines join by id); ``instance_id`` groups the
three candidates of an instance; ``chosen_by[k]`` says whether annotator ``k`` picked this candidate.

>>> from mmjudge.datasets.mmhe import MMHE
>>> sorted(c for c in MMHE.FEATURES if c in ("correctness", "conciseness"))
['conciseness', 'correctness']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, check_count, json_kind
from mmjudge.datasets._judgments import rows_of
from mmjudge.human_judgments import HumanJudgments
from mmjudge.prompts import load_prompt_set

F = src.MMHE_FIELDS
N = src.MMHE_COUNTS
# The five criteria, in the paper's order, from the prompt set the HarmonicEval metric judges with.
CRITERIA = list(load_prompt_set(src.MMHE_PROMPT_SET).criteria)


class MMHE(BenchmarkBuilder):
    PRETTY_NAME = "MMHE"
    DESCRIPTION = (
        "Multi-task Multi-criteria Human Evaluation benchmark from the HarmonicEval paper: referring expression "
        "generation (REG, RefCOCO), visual question answering (VQA, OK-VQA), visual document understanding "
        "(VDU, VisualMRC) and image captioning (IC, MSCOCO); 100 instances per task, three candidate texts per "
        "instance from ten VLMs, rated 1–5 by three expert annotators on Correctness, Completeness, Clarity, "
        "Fluency and Conciseness (18,000 ratings), and each annotator's best-of-three choice."
    )
    CITATION = """@inproceedings{ohi2025harmoniceval,
  title={HarmonicEval: Multi-modal, Multi-task, Multi-criteria Automatic Evaluation Using a Vision Language Model},
  author={Ohi, Masanari and Kaneko, Masahiro and Okazaki, Naoaki and Inoue, Nakamasa},
  year={2025}
}"""
    HOMEPAGE = src.MMHE_HOMEPAGE
    LICENSE = "see the authors' release (sources: RefCOCO Apache-2.0, OK-VQA Apache-2.0, VisualMRC, MSCOCO CC BY 4.0)"
    SOURCE_FILES = (
        "`mmhe.json` (or `.jsonl`: one object per instance, fields in `_sources.MMHE_FIELDS`) and the images it names"
    )
    KNOWN_ISSUES = (
        "The authors' release layout was not reachable when this loader was written: it reads the layout in "
        "mmjudge/datasets/_sources.py (MMHE_FILES, MMHE_FIELDS); correct it there if the release differs.",
        "Overall judgments are best-of-three choices, not scores; how they become pairs is the meta-evaluation's "
        "option.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "task": datasets.Value("string"),
            "instance_id": datasets.Value("string"),
            "candidate_index": datasets.Value("int32"),
            "model": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "question": datasets.Value("string"),
            "box": datasets.Sequence(datasets.Value("float32")),
            "text": datasets.Value("string"),
            "annotators": datasets.Sequence(datasets.Value("string")),
            **{c: datasets.Sequence(datasets.Value("int32")) for c in CRITERIA},
            "chosen_by": datasets.Sequence(datasets.Value("bool")),
        }
    )
    DEFAULT_COUNTS = {
        "test": len(src.MMHE_TASKS) * N["instances_per_task"] * N["candidates_per_instance"],
        "instances_per_task": N["instances_per_task"],
        "ratings": N["ratings"],
    }

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        _layout, paths = self.detect_layout(source)
        path = next(paths[n] for n in src.MMHE_FILES["annotations"] if n in paths)
        instances = _read_instances(path)
        rows: list[dict[str, Any]] = []
        per_task = dict.fromkeys(src.MMHE_TASKS, 0)
        for n, inst in enumerate(instances, 1):
            where = f"{path.name}: instance {n}"
            if not isinstance(inst, dict):
                raise DataError(f"{where}: expected an object (task, candidates…), but got {json_kind(inst)}.")
            task = str(inst.get(F["task"], "")).upper()
            if task not in per_task:
                raise DataError(f"{where}: expected task in {list(src.MMHE_TASKS)}, but got {inst.get(F['task'])!r}.")
            per_task[task] += 1
            rows.extend(self._instance_rows(source, inst, task, where))
        expected = self.expected_counts
        if expected.get("instances_per_task") is not None:
            for task, count in per_task.items():
                check_count(f"MMHE {task} instances", count, expected["instances_per_task"])
        if expected.get("ratings") is not None:
            check_count("MMHE ratings", sum(len(r[c]) for r in rows for c in CRITERIA), expected["ratings"])
        return {"test": rows}

    def _instance_rows(self, source: Path, inst: dict, task: str, where: str) -> list[dict[str, Any]]:
        instance_id = str(inst.get(F["instance_id"], ""))
        if not instance_id:
            raise DataError(f"{where}: missing {F['instance_id']!r}.")
        candidates = inst.get(F["candidates"]) or []
        if not isinstance(candidates, list) or any(not isinstance(c, dict) for c in candidates):
            raise DataError(f"{where} ({task} {instance_id}): expected a list of candidate objects.")
        if len(candidates) != N["candidates_per_instance"]:
            raise DataError(f"{where} ({task} {instance_id}): expected 3 candidates, but got {len(candidates)}.")
        annotators = [str(a) for a in inst.get(F["annotators"]) or range(N["annotators"])]
        best = inst.get(F["best"]) or []
        if len(annotators) != N["annotators"] or len(best) != N["annotators"]:
            raise DataError(
                f"{where} ({task} {instance_id}): expected 3 annotators and 3 best-of-three choices, "
                f"but got {len(annotators)} and {len(best)}."
            )
        if any(not isinstance(b, int) or not 0 <= b < len(candidates) for b in best):
            raise DataError(
                f"{where} ({task} {instance_id}): best-of-three choices must be candidate indices 0-2, but got "
                f"{best!r}."
            )
        image_rel = inst.get(F["image"])
        image = self.image(source / image_rel) if image_rel else None
        box = inst.get(F["box"])
        if task == "REG" and (not box or len(box) != 4):
            raise DataError(f"{where} (REG {instance_id}): expected a bounding box [x, y, w, h], but got {box!r}.")
        rows = []
        for k, cand in enumerate(candidates):
            ratings = cand.get(F["ratings"]) or {}
            if not isinstance(ratings, dict):
                raise DataError(f"{where} ({task} {instance_id}, candidate {k}): expected {{criterion: [ratings]}}.")
            row = {
                "id": f"mmhe-{task.lower()}-{instance_id}-{k}",
                "task": task,
                "instance_id": instance_id,
                "candidate_index": k,
                "model": str(cand.get(F["model"], "")),
                "image": image,
                "image_path": image_rel,
                "question": inst.get(F["question"]),
                "box": [float(v) for v in box] if box else None,
                "text": str(cand.get(F["text"], "")),
                "annotators": annotators,
                "chosen_by": [b == k for b in best],
            }
            for criterion in CRITERIA:
                values = ratings.get(criterion)
                if (
                    not isinstance(values, list)
                    or len(values) != N["annotators"]
                    or any(not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 5 for v in values)
                ):
                    raise DataError(
                        f"{where} ({task} {instance_id}, candidate {k}): expected three integer "
                        f"{criterion} ratings in 1-5, but got {values!r}."
                    )
                row[criterion] = values
            rows.append(row)
        return rows


def _read_instances(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(f"{path.name} is not valid JSON ({err}); truncated download?") from None
    instances = data.get("instances") if isinstance(data, dict) else data
    if not isinstance(instances, list):
        raise DataError(
            f'{path.name}: expected a list of instances (or {{"instances": [...]}}), but got {json_kind(data)}.'
        )
    return instances


def to_human_judgments(dataset: Any) -> HumanJudgments:
    items, ratings, groups = [], [], {}
    for _split, row in rows_of(dataset):
        task = src.MMHE_TASKS[row["task"]]
        items.append(
            {
                "id": row["id"],
                "task": task,
                "text": row["text"],
                "image": row["image"],
                "image_path": row["image_path"],
                "question": row["question"],
                "box": row["box"],
                "model": row["model"],
            }
        )
        for criterion in CRITERIA:
            for annotator, score in zip(row["annotators"], row[criterion]):
                ratings.append(
                    {
                        "id": row["id"],
                        "task": task,
                        "criterion": criterion,
                        "score": float(score),
                        "annotator": annotator,
                    }
                )
        group = groups.setdefault((task, row["instance_id"]), {"ids": [], "best": {}, "annotators": row["annotators"]})
        group["ids"].append(row["id"])
        for annotator, chosen in zip(row["annotators"], row["chosen_by"]):
            if chosen:
                group["best"][annotator] = row["id"]
    choices = [
        {"group": f"mmhe-{task}-{instance}", "task": task, "candidates": g["ids"], "annotator": a, "best": best}
        for (task, instance), g in groups.items()
        for a in g["annotators"]
        if (best := g["best"].get(a))
    ]
    return HumanJudgments(
        name="mmhe", items=items, ratings=ratings, choices=choices, correlation="tau_b", criteria=list(CRITERIA)
    )
