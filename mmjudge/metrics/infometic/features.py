"""InfoMetIC's image inputs: the authors' precomputed region features, read from their own layout.

InfoMetIC does not look at pixels. The authors precomputed, per image, CLIP ViT-B/32 embeddings of the whole
image and of up to 100 detector-box crops, and the indices of at most 20 "clustered" boxes; they published
these for MSCOCO only (an LMDB of about 119 GB), and neither the detector nor the clustering nor an extraction
script (so features of other images — Flickr8k, Composite's Flickr30k part, Pascal-50S — cannot be rebuilt).

The layout (the authors' ``infometic/data/``, read by their ``inference.py``):

* ``coco_fn2imgid.json`` (any ``*fn2imgid.json``): image file name → image id;
* an LMDB folder (``mscoco_vit32_lmdb/``, any folder holding ``data.mdb``) whose value under ``str(imgid)`` is an
  ``np.savez`` archive with ``feat`` (N × 512), ``bbox`` (N × 4, pixels ``x1, y1, x2, y2``), ``bbox_text``,
  ``global_feat`` (512), ``global_bbox`` (``[0, 0, W, H]``) and ``clustered_bbox`` (K indices).

Assembled as their ``get_image_input`` does: the N boxes are padded with zeros (or cut) to 100, the K clustered
rows picked, and a zero "pad" row appended.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# LMDB allows one open environment per folder and process: metrics on the same folder (the three configurations
# of one reproduce run) share it.
_OPEN: dict[str, Any] = {}
IMAGE_LENGTH = 100  # the authors' --image_length: boxes padded or cut to this many before the clustered pick
MISSING = (
    "InfoMetIC needs `features=`: the folder of the authors' precomputed region features "
    "(coco_fn2imgid.json and the mscoco_vit32_lmdb LMDB; published for MSCOCO only, the detector and the "
    "clustering unpublished, so they cannot be rebuilt for other images)."
)


@dataclass(frozen=True)
class RegionInput:
    """One image's inputs: ``regions`` ((K+1) × D, the last row the zero pad), ``boxes`` ((K+1) × 4),
    ``image_global`` (D) and ``global_box`` (4)."""

    regions: np.ndarray
    boxes: np.ndarray
    image_global: np.ndarray
    global_box: np.ndarray


def assemble(archive: Any, image_length: int = IMAGE_LENGTH) -> RegionInput:
    """A :class:`RegionInput` from one stored archive (a mapping of the arrays named above).

    >>> a = {"feat": np.ones((3, 2)), "bbox": np.arange(12.0).reshape(3, 4), "global_feat": np.zeros(2),
    ...      "global_bbox": np.array([0, 0, 8, 6]), "clustered_bbox": np.array([2, 0])}
    >>> r = assemble(a)
    >>> r.regions.tolist(), r.boxes[:, 0].tolist()
    ([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]], [8.0, 0.0, 0.0])
    """
    feat = np.asarray(archive["feat"], dtype=np.float64)
    bbox = np.asarray(archive["bbox"], dtype=np.float64)
    if len(feat) < image_length:
        feat = np.pad(feat, ((0, image_length - len(feat)), (0, 0)))
        bbox = np.pad(bbox, ((0, image_length - len(bbox)), (0, 0)))
    feat, bbox = feat[:image_length], bbox[:image_length]
    picked = np.asarray(archive["clustered_bbox"], dtype=np.int64).reshape(-1)
    regions = np.zeros((len(picked) + 1, feat.shape[1]))
    boxes = np.zeros((len(picked) + 1, 4))
    regions[: len(picked)], boxes[: len(picked)] = feat[picked], bbox[picked]
    return RegionInput(
        regions.astype(np.float32),
        boxes.astype(np.float32),
        np.asarray(archive["global_feat"], dtype=np.float32).reshape(-1),
        np.asarray(archive["global_bbox"], dtype=np.float32).reshape(-1),
    )


class RegionFeatures:
    """The authors' feature folder, opened read-only; :meth:`get` gives an image's :class:`RegionInput` by
    its file name.

    Raises:
        FileNotFoundError: no folder, or it lacks the id map or the LMDB (one line naming what is missing).
    """

    def __init__(self, folder: str | os.PathLike):
        root = Path(folder).expanduser()
        if not root.is_dir():
            raise FileNotFoundError(f"InfoMetIC features folder {str(root)!r} does not exist. {MISSING}")
        maps = sorted(root.glob("*fn2imgid.json"))
        stores = sorted(p.parent for p in root.glob("*/data.mdb")) or ([root] if (root / "data.mdb").is_file() else [])
        if len(maps) != 1 or len(stores) != 1:
            found = f"{len(maps)} *fn2imgid.json file(s) and {len(stores)} LMDB folder(s)"
            raise FileNotFoundError(
                f"InfoMetIC features folder {str(root)!r} holds {found}, not one of each. {MISSING}"
            )
        self.root = root
        self.ids: dict[str, Any] = json.loads(maps[0].read_text(encoding="utf-8"))
        self.store = stores[0]

    def _transaction(self) -> Any:
        key = str(self.store.resolve())
        if key not in _OPEN:
            try:
                import lmdb
            except ImportError:
                from mmjudge.models import missing_dependency

                raise missing_dependency(ImportError("No module named 'lmdb'"), "InfoMetIC's region features") from None
            _OPEN[key] = lmdb.open(key, readonly=True, lock=False, readahead=False, create=False)
        return _OPEN[key].begin(buffers=True)

    def name_of(self, image: Any) -> str | None:
        """The file name an image input is looked up by: a path's, a ``{"path": …}`` dict's, or the file a PIL
        image was opened from; ``None`` for an image that has none (bytes, an image built in memory)."""
        if isinstance(image, dict):
            image = image.get("path")
        if isinstance(image, (str, os.PathLike)):
            return Path(image).name
        filename = getattr(image, "filename", None)
        return Path(filename).name if filename else None

    def get(self, name: str) -> RegionInput | None:
        """The image's inputs, or ``None`` when the folder has no features for ``name``."""
        if name not in self.ids:
            return None
        with self._transaction() as txn:
            value = txn.get(str(self.ids[name]).encode("utf-8"))
            if value is None:
                return None
            with np.load(io.BytesIO(bytes(value)), allow_pickle=False) as archive:
                return assemble(archive)
