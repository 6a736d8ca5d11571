"""THumB 1.0 (Kasai et al. 2022): rubric-based human scores of MSCOCO captions — precision and recall
(1–5), fluency / conciseness / inclusive-language penalties (≤ 0) and total = (P+R)/2 + penalties.

>>> from mmjudge.datasets.thumb import THumB, CRITERIA
>>> CRITERIA
['precision', 'recall', 'fluency', 'conciseness', 'inclusive', 'total']
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, check_count, check_range, image_folder, json_kind
from mmjudge.datasets._judgments import caption_judgments
from mmjudge.human_judgments import HumanJudgments

UPSTREAM = {
    "precision": "P",
    "recall": "R",
    "fluency": "Flu",
    "conciseness": "Con",
    "inclusive": "Inc",
    "total": "human_score",
}
CRITERIA = list(UPSTREAM)


class THumB(BenchmarkBuilder):
    PRETTY_NAME = "THumB 1.0"
    DESCRIPTION = (
        "Transparent Human Benchmark for MSCOCO image captioning (Kasai et al., 2022): 500 captions per system "
        "(machine systems and a human baseline) scored with the THumB 1.0 rubric."
    )
    CITATION = """@inproceedings{kasai2022thumb,
  title={Transparent Human Evaluation for Image Captioning},
  author={Kasai, Jungo and Sakaguchi, Keisuke and Dunagan, Lavinia and Morrison, Jacob and Le Bras, Ronan and Choi, Yejin and Smith, Noah A.},
  booktitle={NAACL}, year={2022}
}"""  # noqa: E501 - the card's citation, as published
    HOMEPAGE = src.THUMB_REPO
    LICENSE = "see the THumB repository; images under the MSCOCO terms"
    SOURCE_FILES = "`mscoco_THumB-1.0.jsonl` and `mscoco_references.jsonl`; MSCOCO images in `val2014/` (optional)"
    KNOWN_ISSUES = (
        "The references file name differs between the README and public code (.json vs .jsonl); both are accepted.",
        "Validation checks 500 rows per system (the README's statement) and total = (P+R)/2 + Flu + Con + Inc.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "system": datasets.Value("string"),
            "seg_id": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "text": datasets.Value("string"),
            "references": datasets.Sequence(datasets.Value("string")),
            **{c: datasets.Value("float32") for c in CRITERIA},
        }
    )
    DEFAULT_COUNTS = dict(src.THUMB_COUNTS)

    def download(self, dl_manager: datasets.DownloadManager) -> Path:
        paths = dl_manager.download(src.THUMB_URLS)
        folder = Path(paths["scores"]).parent / "thumb_source"
        folder.mkdir(exist_ok=True)
        for key, name in (("scores", src.THUMB_FILES["scores"]), ("references", src.THUMB_FILES["references"][0])):
            (folder / name).write_bytes(Path(paths[key]).read_bytes())
        return folder

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        _layout, paths = self.detect_layout(source)
        scores = paths[src.THUMB_FILES["scores"]]
        refs_path = next(paths[n] for n in src.THUMB_FILES["references"] if n in paths)
        refs = {}
        for n, line in enumerate(_lines(refs_path), 1):
            if not isinstance(line.get("refs"), list) or "seg_id" not in line:
                raise DataError(f"{refs_path.name}:{n}: expected an object with 'seg_id' and a 'refs' list.")
            refs[str(line["seg_id"])] = [str(r) for r in line["refs"]]
        images = image_folder(source, src.THUMB_FILES["images"])
        rows = []
        for n, line in enumerate(_lines(scores), 1):
            where = f"{scores.name}:{n}"
            lacking = [k for k in ("seg_id", "SYS", "hyp", "image") if k not in line]
            if lacking:
                raise DataError(f"{where}: missing {', '.join(map(repr, lacking))} (THumB's mscoco_THumB-1.0.jsonl).")
            seg = str(line.get("seg_id"))
            if seg not in refs:
                raise DataError(f"{where}: seg_id {seg!r} has no references in {refs_path.name}.")
            values = {c: float(line[u]) if u in line else None for c, u in UPSTREAM.items()}
            if any(v is None for v in values.values()):
                raise DataError(f"{where}: missing one of {list(UPSTREAM.values())}.")
            for c in ("precision", "recall"):
                check_range(values[c], 1, 5, f"{where} {c}")
            for c in ("fluency", "conciseness", "inclusive"):
                check_range(values[c], -5, 0, f"{where} {c}")
            total = (
                (values["precision"] + values["recall"]) / 2
                + values["fluency"]
                + values["conciseness"]
                + values["inclusive"]
            )
            if abs(total - values["total"]) > 1e-4:
                raise DataError(f"{where}: human_score {values['total']} != (P+R)/2 + Flu + Con + Inc = {total}.")
            image_name = str(line["image"])
            rows.append(
                {
                    "id": f"thumb-{line['SYS']}-{seg}",
                    "system": str(line["SYS"]),
                    "seg_id": seg,
                    "image": self.image(images / image_name) if images else None,
                    "image_path": f"{src.THUMB_FILES['images']}/{image_name}",
                    "text": str(line["hyp"]),
                    "references": refs[seg],
                    **values,
                }
            )
        per_system = self.expected_counts.get("per_system")
        if per_system is not None:
            for system, count in Counter(r["system"] for r in rows).items():
                check_count(f"THumB rows of system {system!r}", count, per_system)
        return {"test": rows}


def _lines(path: Path) -> list[dict]:
    """The JSON objects of a JSON Lines file, one per line: a line that is not JSON, or not an object (a
    ``.json`` file holding one list, say), is one line naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as err:
        raise DataError(f"{path.name} is not valid JSON lines ({err}); truncated download?") from None
    for n, line in enumerate(lines, 1):
        if not isinstance(line, dict):
            raise DataError(f"{path.name}: expected one JSON object per line, but line {n} holds {json_kind(line)}.")
    return lines


def to_human_judgments(dataset: Any) -> HumanJudgments:
    hj = caption_judgments("thumb", dataset, correlation="tau_c", per_rating=False, criteria=CRITERIA)
    for rating in hj.ratings:  # total is THumB's overall score
        if rating["criterion"] == "total":
            rating["criterion"] = "overall"
    hj.criteria = CRITERIA[:-1]
    return hj
