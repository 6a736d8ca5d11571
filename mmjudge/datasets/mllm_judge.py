"""MLLM-as-a-Judge (Chen et al., ICML 2024): human judgments of VLM answers in three settings, one configuration each
(``config_name``): ``pair`` (which of two answers is better, or a tie; the default), ``score`` (one answer rated 1–5)
and ``batch`` (three or four answers ranked best to worst), read from ``Dataset/Benchmark/{pair,score,batch}.jsonl``
of ``Dongping-Chen/MLLM-Judge`` with the images of ``Dataset/image/``.

>>> ranking("CDAB", 4, "r")
[2, 3, 0, 1]
>>> pair_preference(" c ", "r")
0.5
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import datasets

from mmjudge.datasets import _sources as src
from mmjudge.datasets._base import BenchmarkBuilder, BenchmarkConfig, DataError, check_range
from mmjudge.datasets._judge_files import ImageFiles, ids_or_content, read_jsonl, record_field, text_field
from mmjudge.datasets._judge_pairs import pair_judgments
from mmjudge.datasets._judgments import rows_of
from mmjudge.human_judgments import HumanJudgments

LABELS = src.MLLMJ_LABELS
VERSION = datasets.Version("1.0.0")
COMMON = {
    "id": datasets.Value("string"),
    "instruction_id": datasets.Value("string"),
    "image": datasets.Image(),
    "image_path": datasets.Value("string"),
    "original_dataset": datasets.Value("string"),
    "query": datasets.Value("string"),
}
TEXTS = datasets.Sequence(datasets.Value("string"))
CONFIG_FEATURES = {
    "pair": datasets.Features(
        {
            **COMMON,
            "pair_id": datasets.Value("int64"),
            "responses": TEXTS,
            "models": TEXTS,
            "human": datasets.Value("string"),
            "preferred": datasets.Value("float32"),
        }
    ),
    "score": datasets.Features(
        {
            **COMMON,
            "score_id": datasets.Value("int64"),
            "response": datasets.Value("string"),
            "model": datasets.Value("string"),
            "score": datasets.Value("float32"),
        }
    ),
    "batch": datasets.Features(
        {
            **COMMON,
            "responses": TEXTS,
            "models": TEXTS,
            "human": datasets.Value("string"),
            "ranking": datasets.Sequence(datasets.Value("int32")),
        }
    ),
}


def pair_preference(label: Any, where: str) -> float:
    """``A`` -> 0.0 (the first answer), ``B`` -> 1.0, ``C`` (a tie) -> 0.5."""
    key = str(label).strip().upper()
    if key not in src.MLLMJ_PAIR_LABELS:
        raise DataError(f"{where}: expected the human label 'A', 'B' or 'C' (a tie), but got {label!r}.")
    return src.MLLMJ_PAIR_LABELS[key]


def ranking(label: Any, n: int, where: str) -> list[int]:
    """The answers' indices from best to worst, from the human label's letters best first (``"CDAB"``: the third
    answer is the best), as the authors' batch prompt asks for them; anything but a permutation is refused."""
    letters = re.findall(r"[A-Za-z]", str(label))
    order = [ord(c.upper()) - ord("A") for c in letters]
    if sorted(order) != list(range(n)):
        raise DataError(
            f"{where}: expected the human ranking to order the {n} answers' letters "
            f"({''.join(chr(65 + k) for k in range(n))}) best first, but got {label!r}."
        )
    return order


class MLLMJudge(BenchmarkBuilder):
    BUILDER_CONFIGS = [BenchmarkConfig(name=name, version=VERSION) for name in ("pair", "score", "batch")]
    DEFAULT_CONFIG_NAME = "pair"
    CONFIG_FEATURES = CONFIG_FEATURES
    FEATURES = CONFIG_FEATURES["pair"]
    PRETTY_NAME = "MLLM-as-a-Judge"
    DESCRIPTION = (
        "MLLM-as-a-Judge (Chen et al., ICML 2024): answers of four VLMs (GPT-4V, Gemini, LLaVA, CogVLM) to "
        "image-instruction pairs drawn from more than ten data sets, judged by humans in three settings, one "
        "configuration each: "
        "`pair` (default; a row = two answers and `human` A / B / C, C a tie; `preferred` 0, 1 or 0.5), `score` (a row "
        "= one answer and its human score 1-5) and `batch` (a row = three or four answers and their human `ranking`, "
        'indices best first). Load one with `config_name="score"` etc.'
    )
    CITATION = """@inproceedings{chen2024mllmasajudge,
  title={MLLM-as-a-Judge: Assessing Multimodal LLM-as-a-Judge with Vision-Language Benchmark},
  author={Chen, Dongping and Chen, Ruoxi and Zhang, Shilin and Liu, Yinuo and Wang, Yaochen and Zhou, Huichi and
    Zhang, Qihui and Wan, Yao and Zhou, Pan and Sun, Lichao},
  booktitle={ICML}, year={2024}
}"""
    HOMEPAGE = src.MLLMJ_REPO
    LICENSE = (
        "MIT according to the metadata of the authors' Hub copy (shuaishuaicdp/MLLM-Judge, now "
        "ONE-Lab/MLLM-as-a-Judge); no licence file of the GitHub repository was seen here. The images come from "
        "the source data sets"
    )
    SOURCE_FILES = (
        "`Dataset/Benchmark/pair.jsonl`, `score.jsonl` and `batch.jsonl` of github.com/Dongping-Chen/MLLM-Judge with "
        "the images of `Dataset/image/` (they come with a clone of the repository, about 0.9 GB); the authors' Hub "
        "copy (`Benchmark/`, `image/` at its top) reads the same. Every row's image must be there"
    )
    KNOWN_ISSUES = (
        "The human label is read from `human` or `human_answer` (the full files and the Lite / HQ ones spell it "
        "differently); a score may be a number or its text ('4').",
        'batch: `human_answer` lists the answers\' letters best first ("CDAB": the third answer is the best), as the '
        "authors' batch prompt asks a judge to; `ranking` holds the answers' indices in that order.",
        "Verified on the committed files: pair fields (pair.jsonl, pair_lite.jsonl), batch fields (batch.jsonl); "
        "score.jsonl was not seen: its fields are assumed to be score_lite.jsonl's (`score_id`, `name`, `answer`, "
        "`human`).",
        "Ids: `mllm_judge-pair-<pair_id>`, `mllm_judge-score-<score_id>`, `mllm_judge-batch-<id>`; a row without the "
        "upstream id gets one from its content. `instruction_id` is upstream's image-instruction `id`.",
        "No row counts are enforced (none could be verified here). The paper's figures: Pearson correlation (score), "
        "accuracy with and without ties (pair), normalised Levenshtein distance (batch).",
    )

    def _info(self) -> datasets.DatasetInfo:
        info = super()._info()
        info.features = CONFIG_FEATURES[self.config.name]
        return info

    def read(self, source: Path) -> dict[str, list[dict[str, Any]]]:
        self.detect_layout(source)
        config = self.config.name
        path = benchmark_file(source, src.MLLMJ_FILES[config])
        # Rows name their image relative to Dataset/ ("image/200.jpg") or Dataset/image/ ("0.jpg").
        dataset_dir = path.parent.parent if path.parent.name == "Benchmark" else path.parent
        images = ImageFiles(source, (dataset_dir, dataset_dir / "image", *src.MLLMJ_IMAGE_FOLDERS))
        read_row = {"pair": self.pair_row, "score": self.score_row, "batch": self.batch_row}[config]
        rows, upstream, keys = [], [], []
        for number, record in read_jsonl(path, self.PRETTY_NAME):
            where = f"{self.PRETTY_NAME}: {path.name}:{number}"
            row, key = read_row(record, where)
            rel = row["image_path"]
            found = images.find(rel)
            if found is None:
                raise DataError(
                    f"{where}: its image {rel!r} is missing from Dataset/image/ under {str(source)!r}; clone the "
                    "repository with its images (Dataset/image/) and pass its folder."
                )
            row["image"] = self.image(found)
            rows.append(row)
            upstream.append(key)
            keys.append((row["instruction_id"], row["query"], *row.get("responses", [row.get("response")])))
        for row, row_id in zip(rows, ids_or_content(f"mllm_judge-{config}", upstream, keys)):
            row["id"] = row_id
        return {"test": rows}

    def common(self, record: Any, where: str) -> dict[str, Any]:
        return {
            "instruction_id": text_field(record, ("id",), where, optional=True),
            "image_path": text_field(record, ("image_path",), where),
            "original_dataset": text_field(record, ("original_dataset",), where, optional=True),
            "query": text_field(record, ("instruction",), where),
        }

    def pair_row(self, record: Any, where: str) -> tuple[dict[str, Any], Any]:
        answers = [answer(record_field(record, (f"answer{k}",), where), f"{where}: answer{k}") for k in (1, 2)]
        label = text_field(record, LABELS, where)
        pair_id = optional_int(record, "pair_id", where)
        row = {
            **self.common(record, where),
            "pair_id": pair_id,
            "responses": [a for _, a in answers],
            "models": [m for m, _ in answers],
            "human": label,
            "preferred": pair_preference(label, where),
        }
        return row, pair_id

    def score_row(self, record: Any, where: str) -> tuple[dict[str, Any], Any]:
        given = record_field(record, ("answer",), where)
        # score_lite.jsonl: the answer's text with its model in `name`; an {name, answer} object is read too.
        given = given if isinstance(given, dict) else {"name": record.get("name"), "answer": given}
        model, text = answer(given, where)
        score_id = optional_int(record, "score_id", where)
        label = record_field(record, LABELS, where)
        row = {
            **self.common(record, where),
            "score_id": score_id,
            "response": text,
            "model": model,
            "score": check_range(label, 1, 5, f"{where}: human score"),
        }
        return row, score_id

    def batch_row(self, record: Any, where: str) -> tuple[dict[str, Any], Any]:
        given = record_field(record, ("answers",), where, optional=True)
        if given is None:  # the older layout: answer0 ... answer3
            given = [record[f"answer{k}"] for k in range(4) if f"answer{k}" in record]
        if not isinstance(given, list) or len(given) < 2:
            raise DataError(
                f"{where}: expected `answers` to be a list of two or more answers, but got {str(given)[:80]!r}."
            )
        answers = [answer(a, f"{where}: answers[{k}]") for k, a in enumerate(given)]
        label = text_field(record, LABELS, where)
        row = {
            **self.common(record, where),
            "responses": [a for _, a in answers],
            "models": [m for m, _ in answers],
            "human": label,
            "ranking": ranking(label, len(answers), where),
        }
        return row, record_field(record, ("id",), where, optional=True)


def optional_int(record: dict, name: str, where: str) -> int | None:
    """An upstream integer id (``pair_id``, ``score_id``), ``None`` when the record has none."""
    value = record.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise DataError(f"{where}: expected {name!r} to be an integer, but got {value!r}.") from None


def answer(value: Any, where: str) -> tuple[str, str]:
    """``(model name, answer text)`` of an ``{name, answer}`` object."""
    if not isinstance(value, dict) or not isinstance(value.get("answer"), str):
        raise DataError(f"{where}: expected {{'name': ..., 'answer': <text>}}, but got {str(value)[:80]!r}.")
    return str(value.get("name") or ""), value["answer"]


def benchmark_file(source: Path, name: str) -> Path:
    """``Dataset/Benchmark/<name>`` (or ``Benchmark/<name>``, ``<name>``) under ``source``, else the first below."""
    from mmjudge.datasets._layouts import locate

    for folder in src.MLLMJ_FOLDERS:
        if (source / folder / name).is_file():
            return source / folder / name
    found = locate(source, [name]).get(name)
    if found is None:
        raise DataError(
            f"{MLLMJudge.PRETTY_NAME}: no {name} under {str(source)!r}: expected Dataset/Benchmark/{name} of "
            f"{src.MLLMJ_REPO} (configuration {name.split('.')[0]!r})."
        )
    return found


def to_human_judgments(dataset: Any) -> HumanJudgments:
    """pair: the preference pairs (:func:`pair_judgments`, ties counted apart); score: one overall rating per answer
    (Pearson, as the paper); batch: one preference pair per two answers of a ranking."""
    import datasets as hf

    first = next(iter(dataset.values())) if isinstance(dataset, hf.DatasetDict) else dataset
    if "preferred" in first.column_names:
        return pair_judgments("mllm_judge", dataset)
    items, ratings, pairs = [], [], []
    for _split, row in rows_of(dataset):
        texts = [row["response"]] if "score" in row else row["responses"]
        ids = [row["id"]] if "score" in row else [f"{row['id']}-{k}" for k in range(len(texts))]
        for item_id, text in zip(ids, texts):
            items.append(
                {
                    "id": item_id,
                    "task": "vqa",
                    "text": text,
                    "question": row["query"],
                    "image": row["image"],
                    "image_path": row["image_path"],
                }
            )
        if "score" in row:
            ratings.append(
                {
                    "id": row["id"],
                    "task": "vqa",
                    "criterion": "overall",
                    "score": float(row["score"]),
                    "annotator": None,
                }
            )
            continue
        order = [ids[k] for k in row["ranking"]]
        for i, better in enumerate(order):
            for worse in order[i + 1 :]:
                pairs.append(
                    {"task": "vqa", "better": better, "worse": worse, "kind": "mllm_judge", "group": row["id"]}
                )
    correlation = "pearson" if ratings else "accuracy"
    return HumanJudgments(name="mllm_judge", items=items, ratings=ratings, pairs=pairs, correlation=correlation)
