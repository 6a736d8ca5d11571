"""CapArena (Cheng et al., ACL 2025 Findings): 6,523 human battles between two captions of a DOCCI image, from
``caparena_annots_eval.json`` (``data/eval/`` of ``njucckevin/CapArena``) with the DOCCI images found by their file
name (``img``) anywhere under ``data_dir``.

>>> caption_preference({"source1": "gpt-4o", "source2": "human", "winner": "human"})
1.0
>>> caption_preference({"source1": "gpt-4o", "source2": "llava", "winner": "tie"})
0.5
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, DataError, content_ids, default_configs
from mmjudge.datasets._judge_files import ImageFiles, read_json_list, record_field, text_field
from mmjudge.datasets._judge_pairs import pair_judgments
from mmjudge.human_judgments import HumanJudgments


def caption_preference(record: dict[str, Any]) -> float:
    """0.0 when ``winner`` is ``source1``, 1.0 when it is ``source2``, 0.5 (a tie) otherwise — as the authors'
    ``cal_agreement`` reads it."""
    if record["winner"] == record["source1"]:
        return 0.0
    if record["winner"] == record["source2"]:
        return 1.0
    return 0.5


class CapArena(BenchmarkBuilder):
    BUILDER_CONFIGS = default_configs("1.0.0")
    PRETTY_NAME = "CapArena"
    DESCRIPTION = (
        "CapArena (Cheng et al., ACL 2025 Findings): 6,523 pairwise human battles between detailed captions of DOCCI "
        "images, written by 14 VLMs and by humans. A row: `responses` (caption1, caption2), their `sources`, "
        "`preferred` (0, 1, or 0.5 for a tie), the difficulty `cluster` (level 1-4), `reference` (DOCCI's human "
        "description) and `involves_human` (a battle against the human caption, which the authors' judge agreement "
        "leaves out)."
    )
    CITATION = """@inproceedings{cheng2025caparena,
  title={CapArena: Benchmarking and Analyzing Detailed Image Captioning in the LLM Era},
  author={Cheng, Kanzhi and Song, Wenpo and Fan, Jiaxin and Ma, Zheng and Sun, Qiushi and Xu, Fangzhi and Yan,
    Chenyang and Chen, Nuo and Zhang, Jianbing and Chen, Jiajun},
  booktitle={Findings of ACL}, year={2025}
}"""
    HOMEPAGE = src.CAPARENA_REPO
    LICENSE = (
        "CC BY-SA 4.0 according to the project page (NOT verified here); the DOCCI images are under DOCCI's own terms"
    )
    SOURCE_FILES = (
        "`caparena_annots_eval.json` (the human-battle zip linked from github.com/njucckevin/CapArena's README, "
        "unpacked to `data/eval/`) and the 5,100 DOCCI images of the image zip linked there, anywhere under "
        "`data_dir` (found by file name). Every battle's image must be there"
    )
    KNOWN_ISSUES = (
        "`preferred` is 0.5 when `winner` names neither source (a tie), as the authors' cal_agreement reads it.",
        "Battles involving the human caption are kept in the rows (`involves_human`) but left out of `judge_pairs`, "
        "as the authors' judge agreement skips them.",
        "There is no upstream id: ids come from (image, the two sources, the two captions).",
        "The licence (CC BY-SA 4.0) is the project page's, as reported in a third-party discussion; not checked.",
    )
    FEATURES = datasets.Features(
        {
            "id": datasets.Value("string"),
            "image": datasets.Image(),
            "image_path": datasets.Value("string"),
            "responses": datasets.Sequence(datasets.Value("string")),
            "sources": datasets.Sequence(datasets.Value("string")),
            "winner": datasets.Value("string"),
            "preferred": datasets.Value("float32"),
            "cluster": datasets.Value("string"),
            "in_400": datasets.Value("bool"),
            "reference": datasets.Value("string"),
            "involves_human": datasets.Value("bool"),
        }
    )
    DEFAULT_COUNTS = dict(src.CAPARENA_COUNTS)

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        _layout, paths = self.detect_layout(source)
        path = paths[src.CAPARENA_FILE]
        images = ImageFiles(source, ("", "images", "eval/images", "data/eval/images"))
        rows = [
            self.row(record, n, path.name, images) for n, record in enumerate(read_json_list(path, self.PRETTY_NAME))
        ]
        keys = [(r["image_path"], *r["sources"], *r["responses"]) for r in rows]
        for row, row_id in zip(rows, content_ids("caparena", keys)):
            row["id"] = row_id
        return {"test": rows}

    def row(self, record: Any, n: int, file: str, images: ImageFiles) -> dict[str, Any]:
        where = f"{self.PRETTY_NAME}: {file}: battle {n}"
        fields = {name: text_field(record, (name,), where) for name in src.CAPARENA_REQUIRED if name != "winner"}
        # cal_agreement reads any winner that is neither source (an empty one too) as a tie.
        winner = record_field(record, ("winner",), where)
        fields["winner"] = "" if winner is None else str(winner)
        found = images.find(fields["img"])
        if found is None:
            raise DataError(
                f"{where}: its image {fields['img']!r} is missing under {str(images.root)!r}; download the DOCCI "
                "images (the image zip linked from the CapArena README) and unpack them in data_dir."
            )
        sources = [fields["source1"], fields["source2"]]
        in_400 = record.get("in-400", False)
        if not isinstance(in_400, bool):
            raise DataError(f"{where}: expected `in-400` to be true or false, but got {in_400!r}.")
        return {
            "id": "",
            "image": self.image(found),
            "image_path": fields["img"],
            "responses": [fields["caption1"], fields["caption2"]],
            "sources": sources,
            "winner": fields["winner"],
            "preferred": caption_preference(fields),
            "cluster": text_field(record, ("cluster",), where, optional=True),
            "in_400": in_400,
            "reference": text_field(record, ("ref",), where, optional=True),
            "involves_human": src.CAPARENA_HUMAN in sources,
        }


def to_human_judgments(dataset: Any) -> HumanJudgments:
    """Two caption items per battle (``<id>-0``, ``<id>-1``, task ``ic``) and the human preference, for the battles
    the authors' judge agreement counts (none against the human caption; ties counted apart)."""
    return pair_judgments("caparena", dataset)
