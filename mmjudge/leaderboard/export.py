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

from mmjudge.leaderboard.benchmarks import Benchmark
from mmjudge.leaderboard.settings import DEFAULTS
from mmjudge.leaderboard.tracks import GuideWords, get_track
from mmjudge.leaderboard.validation import human_size

FORMATS = {"zip": "JSONL + images, zipped", "parquet": "Parquet with the image bytes (datasets layout)"}
EXAMPLE = "example_submission.jsonl"


def fingerprint(bench: Benchmark, *extra: str) -> str:
    """Changes when the benchmark's items change (its ids and their order), or any of ``extra`` (the
    guide inside the zip, which states the board's limits)."""
    return hashlib.sha256(json.dumps([bench.name, bench.ids, *extra]).encode()).hexdigest()[:12]


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"Unknown format {fmt!r}; the inputs come as {' or '.join(FORMATS)}.")
    return fmt


def inputs_file(bench: Benchmark, folder: str | os.PathLike, fmt: str = "zip", settings: dict | None = None) -> Path:
    """The benchmark's inputs in ``fmt`` under ``folder`` (built on first use, written atomically). The
    zip's README is the guide with the board's ``settings`` (its limits), so a change of limits is a new file."""
    check_format(fmt)
    readme = guide(bench, url=None, settings=settings, plain=True)
    path = Path(folder) / f"{bench.name}-inputs-{fingerprint(bench, readme if fmt == 'zip' else '')}.{fmt}"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.part")
        if fmt == "zip":
            _write_zip(bench, tmp, readme)
        else:
            _write_parquet(bench, tmp)
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
    track = get_track(bench.track)
    return [track.example_line(bench, it) for it in bench.public_items()]


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


def _entry(name: str, stored: bool = False) -> zipfile.ZipInfo:
    """A zip entry that unpacks as an ordinary file (mode 0644: ``ZipFile.writestr`` with a bare name
    gives 0600, which other users on the machine, or a container's user, cannot read)."""
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.external_attr = (0o100644 & 0xFFFF) << 16  # a regular file, rw-r--r--
    info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    return info


def _write_zip(bench: Benchmark, path: Path, readme: str) -> None:
    root = bench.name
    rows = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for k, item in enumerate(bench.public_items(), 1):
            row = dict(item)
            encoded = image_bytes(item.get("image"))
            if encoded is not None:
                name = f"images/{k:06d}.{encoded[1]}"
                zf.writestr(_entry(f"{root}/{name}", stored=True), encoded[0])  # images are already compressed
                row["image"] = name
            elif "image" in row:
                row["image"] = None
            rows.append(row)
        zf.writestr(_entry(f"{root}/inputs.jsonl"), _jsonl(rows))
        zf.writestr(_entry(f"{root}/{EXAMPLE}"), _jsonl(example_submission(bench)))
        zf.writestr(_entry(f"{root}/README.md"), readme)


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
    # A track's own fields (a Judges item's two `responses`) go in as text, or lists of text.
    for c in dict.fromkeys(k for it in items for k in it):
        if c not in types:
            listed = any(isinstance(it.get(c), (list, tuple)) for it in items)
            types[c] = datasets.Sequence(datasets.Value("string")) if listed else datasets.Value("string")
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
def line_format(bench: Benchmark, settings: dict | None = None) -> dict[str, Any]:
    """The submission format as data (the ``/benchmarks`` API): track, items, fields, an example line,
    and the board's limits (``max_upload_bytes``: what ``mmjudge leaderboard submit`` checks first)."""
    s = {**DEFAULTS, **(settings or {})}
    example = example_submission(bench)[0] if bench.ids else {}
    return {
        "name": bench.name,
        "track": bench.track,
        "title": bench.title,
        "description": bench.description,
        "items": len(bench.ids),
        "tasks": list(bench.tasks),
        "fields": get_track(bench.track).line_fields(bench),
        "example": example,
        "formats": list(FORMATS),
        "limits": {
            "max_upload_bytes": int(s["max_upload_bytes"]),
            "max_upload": human_size(int(s["max_upload_bytes"])),
            "uploads": int(s["rate_limit"]),
            "per_minutes": float(s["rate_window_s"]) / 60,
        },
    }


def size_limit_text(settings: dict) -> str:
    """The upload limit in the words every page, guide and message uses: ``4.0 MB (4,194,304 bytes)``."""
    limit = int(settings["max_upload_bytes"])
    return f"{human_size(limit)} ({limit:,} bytes)" if limit >= 2**10 else human_size(limit)


def rate_limit_text(settings: dict) -> str:
    """The rate limit in the words every page and guide uses."""
    window = float(settings["rate_window_s"]) / 60
    return (
        f"{int(settings['rate_limit'])} uploads per {window:g} minutes per address (or Hub user), refused ones included"
    )


def guide(bench: Benchmark, url: str | None = None, settings: dict | None = None, plain: bool = False) -> str:
    """The "How to submit" text of one benchmark (Markdown), with the board's own limits. ``plain``: for the
    README in the download (no page-specific wording). Names from the benchmark's data pass the page's
    escaping helper."""
    from mmjudge.report import markdown_text

    s = {**DEFAULTS, **(settings or {})}
    board = url or "URL-OF-THE-BOARD"

    def command(kind: str, file: str) -> str:
        if kind == "download":
            return f"mmjudge leaderboard download --url {board} --benchmark {bench.name} --out {file}"
        return f"mmjudge leaderboard submit --url {board} --benchmark {bench.name} --file {file}"

    words = GuideWords(
        example=json.dumps(line_format(bench)["example"], ensure_ascii=False),
        size=size_limit_text(s),
        name=bench.name if plain else markdown_text(bench.name),
        command=command,
    )
    lines = [
        f"### How to take part in `{bench.name}` ({bench.track} track)",
        "",
        bench.description if plain else markdown_text(bench.description),
        "",
        *get_track(bench.track).guide_steps(bench, s, words),
        "",
        f"**Limits**: {rate_limit_text(s)}; files at most {size_limit_text(s)}. The same file twice is refused "
        "as a duplicate; sending your own upload again (same file, name and fields, e.g. after a lost reply) "
        "returns its receipt.",
    ]
    return "\n".join(lines) + "\n"
