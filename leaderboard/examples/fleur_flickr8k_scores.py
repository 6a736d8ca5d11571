"""Turn FLEUR's published Flickr8k-Expert scores into a Metrics-track submission for the board.

The FLEUR repository (github.com/Yebin46/FLEUR, ``results/fleur_flickr8k_expert.txt``) lists, for each
rated caption, ``image file : …``, ``caption : …``, ``model score : …`` (the raw printed rating) and
``our score : …`` (FLEUR, the smoothed score). The board's download of the ``flickr8k_expert``
benchmark (``inputs.jsonl``) gives each item's ``id``, its ``text`` and its upstream ``image_path``; this
script joins the two on (image file name, caption with whitespace collapsed) and writes
``{"id", "score"}`` lines — exactly what a metric author does with their own metric's scores.

    mmjudge leaderboard download --url URL --benchmark flickr8k_expert --out f8k.zip
    unzip f8k.zip && python leaderboard/examples/fleur_flickr8k_scores.py \\
        --inputs flickr8k_expert/inputs.jsonl --fleur fleur_flickr8k_expert.txt --out fleur.jsonl
    mmjudge leaderboard submit --url URL --benchmark flickr8k_expert --file fleur.jsonl --name FLEUR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _key(image: str, caption: str) -> tuple[str, str]:
    return Path(image).name, " ".join(caption.split())


def read_fleur(text: str, column: str = "our score") -> dict[tuple[str, str], float]:
    """(image file name, caption) → score from FLEUR's results text (``column``: ``our score`` = FLEUR)."""
    out: dict[tuple[str, str], float] = {}
    image = caption = None
    for n, line in enumerate(text.splitlines(), 1):
        field, sep, value = line.partition(" : ")
        if not sep:
            continue
        if field == "image file":
            image, caption = value.strip(), None
        elif field == "caption":
            caption = value
        elif field == column:
            if image is None or caption is None:
                raise ValueError(f"line {n}: {column!r} before its 'image file' and 'caption' lines.")
            out[_key(image, caption)] = float(value)
    if not out:
        raise ValueError(f"no {column!r} lines: not a FLEUR results file.")
    return out


def submission(inputs: list[dict], scores: dict[tuple[str, str], float]) -> list[dict]:
    """One ``{"id", "score"}`` per board item, in the board's order; an item FLEUR did not score is an error."""
    out, missing = [], []
    for item in inputs:
        key = _key(item.get("image_path") or item.get("image") or "", item["text"])
        if key in scores:
            out.append({"id": item["id"], "score": scores[key]})
        else:
            missing.append(item["id"])
    if missing:
        raise ValueError(f"{len(missing)} board item(s) have no FLEUR score, e.g. {missing[:3]}.")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", required=True, help="inputs.jsonl from the board's download of flickr8k_expert")
    p.add_argument("--fleur", required=True, help="FLEUR's results/fleur_flickr8k_expert.txt")
    p.add_argument("--out", required=True, help="the submission file to write (JSONL)")
    p.add_argument("--column", default="our score", help="'our score' (FLEUR) or 'model score' (the raw rating)")
    args = p.parse_args(argv)
    inputs = [json.loads(line) for line in Path(args.inputs).read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = submission(inputs, read_fleur(Path(args.fleur).read_text(encoding="utf-8"), args.column))
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} scores to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
