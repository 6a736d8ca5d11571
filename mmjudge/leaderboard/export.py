"""What a participant downloads to take part: a benchmark's inputs, an example submission, the guide.

For each benchmark the board offers its inputs (:meth:`Benchmark.public_items`: ids, tasks, images,
questions, boxes; the Metrics track also the texts to score and their references) in two formats:

- ``zip``: ``<name>/inputs.jsonl`` (one item per line; ``image`` names a file under ``images/``),
  ``<name>/images/…``, ``<name>/example_submission.jsonl`` and ``<name>/README.md`` (the guide);
- ``parquet``: one table with the image bytes inside, in the ``datasets`` layout
  (``datasets.load_dataset("parquet", data_files=…)`` decodes the ``image`` column to PIL).

Files are built once per benchmark version (a fingerprint of its ids) into a folder and reused.

>>> import tempfile, zipfile, json
>>> from mmjudge.leaderboard.benchmarks import get_benchmark
>>> bench = get_benchmark("demo-inputs")
>>> path = inputs_file(bench, tempfile.mkdtemp(), "zip")
>>> names = zipfile.ZipFile(path).namelist()
>>> sorted(n.split("/", 1)[1] for n in names)[:4]
['README.md', 'example_submission.jsonl', 'images/000001.png', 'images/000002.png']
>>> json.loads(zipfile.ZipFile(path).read("demo-inputs/inputs.jsonl").decode().splitlines()[2])
{'id': 'demo-vqa-1', 'task': 'vqa', 'image': 'images/000003.png', 'question': 'What colour is the shape?', 'box': None}
>>> example_submission(bench)[0]
{'id': 'demo-ic-1', 'text': "<your model's caption for this image>"}
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

from mmjudge.leaderboard.benchmarks import CRITERIA, PROMPTS, Benchmark
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.validation import MAX_TEXT_CHARS, human_size

FORMATS = {"zip": "JSONL + images, zipped", "parquet": "Parquet with the image bytes (datasets layout)"}
EXAMPLE = "example_submission.jsonl"


def fingerprint(bench: Benchmark) -> str:
    """Changes when the benchmark's items change (its ids and their order)."""
    return hashlib.sha256(json.dumps([bench.name, bench.ids]).encode()).hexdigest()[:12]


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"Unknown format {fmt!r}; the inputs come as {' or '.join(FORMATS)}.")
    return fmt


def inputs_file(bench: Benchmark, folder: str | os.PathLike, fmt: str = "zip") -> Path:
    """The benchmark's inputs in ``fmt`` under ``folder`` (built on first use, written atomically)."""
    check_format(fmt)
    path = Path(folder) / f"{bench.name}-inputs-{fingerprint(bench)}.{fmt}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.part")
        (_write_zip if fmt == "zip" else _write_parquet)(bench, tmp)
        os.replace(tmp, path)
    return path


def example_file(bench: Benchmark, folder: str | os.PathLike) -> Path:
    """A valid-format example submission for ``bench`` (``<name>-example.jsonl`` under ``folder``)."""
    path = Path(folder) / f"{bench.name}-example-{fingerprint(bench)}.jsonl"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.part")
        tmp.write_bytes(_jsonl(example_submission(bench)))
        os.replace(tmp, path)
    return path


def example_submission(bench: Benchmark) -> list[dict]:
    """One line per item in the exact format the track wants; the values are placeholders to replace."""
    if bench.track == "models":
        names = {t: info.text_name for t, info in PROMPTS.task_info.items()}
        return [
            {"id": it["id"], "text": f"<your model's {names.get(it['task'], 'text')} for this image>"}
            for it in bench.public_items()
        ]
    return [{"id": i, "score": 0.0} for i in bench.ids]


def image_bytes(image: Any) -> tuple[bytes, str] | None:
    """(file bytes, extension) of an item's image: encoded files are kept as they are, decoded images
    (PIL) are saved as PNG (lossless); ``None`` when the item has no image."""
    if image is None:
        return None
    if isinstance(image, dict):
        if image.get("bytes"):
            return _with_extension(bytes(image["bytes"]))
        image = image.get("path")
        if not image:
            return None
    if isinstance(image, (bytes, bytearray)):
        return _with_extension(bytes(image))
    if isinstance(image, (str, os.PathLike)):
        return _with_extension(Path(image).read_bytes())
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue(), "png"


def _with_extension(data: bytes) -> tuple[bytes, str]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        kind = (img.format or "png").lower()
    return data, {"jpeg": "jpg"}.get(kind, kind)


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def _write_zip(bench: Benchmark, path: Path) -> None:
    root = bench.name
    rows = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for k, item in enumerate(bench.public_items(), 1):
            row = dict(item)
            encoded = image_bytes(item.get("image"))
            if encoded is not None:
                name = f"images/{k:06d}.{encoded[1]}"
                zf.writestr(f"{root}/{name}", encoded[0], compress_type=zipfile.ZIP_STORED)  # already compressed
                row["image"] = name
            elif "image" in row:
                row["image"] = None
            rows.append(row)
        zf.writestr(f"{root}/inputs.jsonl", _jsonl(rows))
        zf.writestr(f"{root}/{EXAMPLE}", _jsonl(example_submission(bench)))
        zf.writestr(f"{root}/README.md", guide(bench, url=None, plain=True))


def _write_parquet(bench: Benchmark, path: Path) -> None:
    import datasets

    types = {
        "id": datasets.Value("string"),
        "task": datasets.Value("string"),
        "text": datasets.Value("string"),
        "image": datasets.Image(),
        "question": datasets.Value("string"),
        "box": datasets.Sequence(datasets.Value("float32")),
        "references": datasets.Sequence(datasets.Value("string")),
        "image_path": datasets.Value("string"),
        "split": datasets.Value("string"),
    }
    items = bench.public_items()
    columns = [c for c in types if any(c in it for it in items)]
    rows = []
    for item in items:
        row = {c: item.get(c) for c in columns}
        if "image" in columns:
            encoded = image_bytes(item.get("image"))
            row["image"] = {"bytes": encoded[0], "path": None} if encoded else None
        rows.append(row)
    dataset = datasets.Dataset.from_list(rows, features=datasets.Features({c: types[c] for c in columns}))
    shown = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # a server log, not a terminal
    try:
        dataset.to_parquet(str(path))
    finally:
        if shown:
            datasets.enable_progress_bars()


# ------------------------------------------------------------------------------------------ guide
def line_format(bench: Benchmark) -> dict[str, Any]:
    """The submission format as data (the ``/benchmarks`` API): track, items, fields, an example line."""
    example = example_submission(bench)[0] if bench.ids else {}
    if bench.track == "models":
        fields = {
            "id": "an id of the inputs, each exactly once",
            "text": f"your model's output (at most {MAX_TEXT_CHARS:,} characters)",
        }
    else:
        fields = {
            "id": "an item id, each exactly once",
            "score": "your metric's score of the item (a finite number; higher = better)",
        }
        criteria = [c for c in bench.judgments().criteria if c != "overall"]
        if criteria:
            fields["<criterion>"] = f"optional: one score column per criterion among {', '.join(criteria)}"
    return {
        "name": bench.name,
        "track": bench.track,
        "title": bench.title,
        "description": bench.description,
        "items": len(bench.ids),
        "tasks": list(bench.tasks),
        "fields": fields,
        "example": example,
        "formats": list(FORMATS),
    }


def guide(bench: Benchmark, url: str | None = None, settings: dict | None = None, plain: bool = False) -> str:
    """The "How to submit" text of one benchmark (Markdown). ``plain``: for the README in the download
    (no page-specific wording). Names from the benchmark's data pass the page's escaping helper."""
    from mmjudge.report import markdown_text

    s = {**DEFAULTS, **(settings or {})}
    name = bench.name if plain else markdown_text(bench.name)
    spec = line_format(bench)
    board = url or "URL-OF-THE-BOARD"
    example = json.dumps(spec["example"], ensure_ascii=False)
    per_task = (
        {t: sum(1 for it in bench.public_items() if it.get("task") == t) for t in bench.tasks}
        if bench.track == "models"
        else {}
    )
    lines = [
        f"### How to take part in `{bench.name}` ({bench.track} track)",
        "",
        markdown_text(bench.description) if not plain else bench.description,
        "",
    ]
    if bench.track == "models":
        lines += [
            "1. **Get the inputs**: *Inputs (zip)* — `inputs.jsonl` (one item per line: `id`, `task`, `image`, "
            "`question`, `box`) and `images/` — or *Inputs (Parquet)*, the same with the image bytes inside "
            '(`datasets.load_dataset("parquet", data_files=…)`).',
            f"2. **Run your model on every item** ({len(bench.ids)} items). What each task asks:",
        ]
        for t in bench.tasks:
            info = PROMPTS.task_info.get(t)
            if info is None:
                continue
            what = {
                "question": "to the item's `question`",
                "box": "for the object in `box` (x, y, width, height in pixels)",
            }
            target = " and ".join(what[n] for n in info.needs) or "of the image"
            lines.append(
                f"   - `{t}` — {info.label} ({per_task.get(t, 0)} items): write the {info.text_name} {target}."
            )
        lines += [
            "3. **Write one JSON object per line** (UTF-8), every id exactly once, nothing else needed:",
            "",
            "   ```json",
            f"   {example}",
            "   ```",
            "",
            f"   *Example submission* has a line for every id. Texts: at most {MAX_TEXT_CHARS:,} characters each.",
            f"4. **Submit** the file (at most {human_size(int(s['max_upload_bytes']))}) on the *Submit* tab (track "
            f"*models*, benchmark *{name}*), or from a terminal, which also waits for the score:",
            "",
            "   ```",
            f"   mmjudge leaderboard download --url {board} --benchmark {bench.name} --out inputs.zip",
            f"   mmjudge leaderboard submit --url {board} --benchmark {bench.name} --file outputs.jsonl --name my-vlm",
            "   ```",
            "",
            f"**Scoring**: HarmonicEval rates every text 1–5 on {', '.join(CRITERIA)} with the board's judge; rows are "
            "ranked overall, per task and per criterion, each with a 95% bootstrap interval over the items, and "
            "marked when separable from the row above (paired bootstrap on the same items). Items the judge "
            f"cannot rate are counted; above {100 * float(s['max_failed_share']):g}% of the items a submission is "
            "shown but not ranked.",
        ]
    else:
        criteria = [c for c in bench.judgments().criteria if c != "overall"]
        lines += [
            "1. **Get the items**: *Inputs (zip)* — `inputs.jsonl` (one item per line: `id`, `task`, `text` to "
            "score, `references`, and the `image` file or its upstream `image_path` where the images may not be "
            "redistributed) — or *Inputs (Parquet)*.",
            f"2. **Score every item with your metric** ({len(bench.ids)} items).",
            "3. **Write one JSON object per line** (UTF-8), every id exactly once:",
            "",
            "   ```json",
            f"   {example}",
            "   ```",
            "",
        ]
        if criteria:
            lines.append(
                f"   Optionally add one score column per criterion ({', '.join(criteria)}); each is correlated with "
                "that criterion's human ratings."
            )
        lines += [
            f"4. **Submit** the file (at most {human_size(int(s['max_upload_bytes']))}) on the *Submit* tab (track "
            f"*metrics*, benchmark *{name}*), or from a terminal:",
            "",
            "   ```",
            f"   mmjudge leaderboard download --url {board} --benchmark {bench.name} --out items.zip",
            f"   mmjudge leaderboard submit --url {board} --benchmark {bench.name} --file scores.jsonl --name my-metric",
            "   ```",
            "",
            f"**Scoring**: the meta-evaluation compares your scores with the human judgments (protocol "
            f"`{s['protocol']}`, {int(s['bootstrap'])} bootstrap resamples, seed {int(s['seed'])}); the headline is "
            "the benchmark's usual figure, with its interval, and each row says whether it is separable from "
            "the row above.",
        ]
    window = float(s["rate_window_s"]) / 60
    lines += [
        "",
        f"**Limits**: {int(s['rate_limit'])} uploads per {window:g} minutes per address (or Hub user), refused "
        "ones included; the same file twice is refused as a duplicate.",
    ]
    return "\n".join(lines) + "\n"
