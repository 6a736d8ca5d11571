"""A toy MMHE-shaped set of human judgments with a known quality per candidate, and score files that follow
that quality with a chosen noise: the inputs of the meta-evaluation tests (known answers, no model)."""

from __future__ import annotations

import json

import numpy as np

from mmjudge.human_judgments import HumanJudgments

CRITERIA = ["correctness", "completeness", "clarity", "fluency", "conciseness"]


def toy_mmhe(n_instances=4, seed=0, image=None) -> tuple[HumanJudgments, dict]:
    rng = np.random.default_rng(seed)
    items, ratings, choices, quality = [], [], [], {}
    for task in ("reg", "vqa", "vdu", "ic"):
        for i in range(n_instances):
            cands = [f"{task}{i}_{k}" for k in range(3)]
            for cid in cands:
                quality[cid] = float(rng.random())
                items.append(
                    {
                        "id": cid,
                        "task": task,
                        "text": f"A caption number {cid}.",
                        "question": "What is it?",
                        "image": image,
                        "box": [2, 2, 10, 10] if task == "reg" else None,
                    }
                )
                for c in CRITERIA:
                    for a in range(3):
                        ratings.append(
                            {
                                "id": cid,
                                "task": task,
                                "criterion": c,
                                "annotator": str(a),
                                "score": float(np.clip(round(1 + 4 * quality[cid] + rng.normal(0, 1)), 1, 5)),
                            }
                        )
            best = max(cands, key=quality.get)
            choices += [
                {"group": f"{task}{i}", "task": task, "candidates": cands, "annotator": str(a), "best": best}
                for a in range(3)
            ]
    return HumanJudgments(name="mmhe", items=items, ratings=ratings, choices=choices, criteria=CRITERIA), quality


def write_scores(path, quality, noise, seed):
    rng = np.random.default_rng(seed)
    path.write_text(
        "".join(json.dumps({"id": i, "score": q + float(rng.normal(0, noise))}) + "\n" for i, q in quality.items())
    )
    return str(path)
