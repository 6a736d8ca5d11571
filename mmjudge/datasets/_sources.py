"""Where every benchmark comes from, in ONE place, so a moved file or a renamed field is a one-line fix.

Each entry says which files a local ``data_dir`` must hold, which public URLs (if any) the loader
downloads when no ``data_dir`` is given, the counts the upstream itself publishes (used by validation
unless a caller passes ``expected_counts``) and whether that mapping could be checked against the
real upstream files from the machine this code was written on (it could not reach the Hub or the
authors' pages; see ``VERIFIED``).
"""

from __future__ import annotations

from typing import Any

# --- MMHE (Ohi et al., HarmonicEval paper) -------------------------------------------------------
# Project page named in the paper. The release's file layout was NOT visible from here, so the loader
# reads the layout below; if the real release differs, change MMHE_FILES / MMHE_FIELDS only.
MMHE_HOMEPAGE = "https://stjohn2007.github.io/MMHE_project/"
MMHE_URLS: dict[str, str] = {}  # no verified download URL: pass data_dir
MMHE_FILES = {"annotations": ["mmhe.json", "mmhe.jsonl"], "images": "images"}
# instance-level keys in the annotation file -> our names
MMHE_FIELDS = {
    "task": "task",
    "instance_id": "instance_id",
    "image": "image",
    "question": "question",
    "box": "bbox",
    "candidates": "candidates",
    "annotators": "annotators",
    "best": "best",  # per annotator: index (0..2) of the candidate chosen as best of three
    # candidate-level keys
    "model": "model",
    "text": "text",
    "ratings": "ratings",  # {criterion: [r_annotator1, r_annotator2, r_annotator3]}
}
# task as written in the file -> the metrics' task name. The criteria are not typed here: the file's
# `ratings` are keyed by the HarmonicEval prompt set's criterion names (mmjudge/prompts/harmonic_eval.toml).
MMHE_TASKS = {"REG": "reg", "VQA": "vqa", "VDU": "vdu", "IC": "ic"}
MMHE_PROMPT_SET = "harmonic_eval"
MMHE_COUNTS = {"instances_per_task": 100, "candidates_per_instance": 3, "annotators": 3, "ratings": 18000}

# --- LongCap-Arena (Matsuda et al., VELA) -----------------------------------------------------------
LONGCAP_REPO = "Ka2ukiMatsuda/LongCap-Arena"
LONGCAP_REVISION = "main"
# our split -> upstream split prefix; upstream has one split per criterion: f"{prefix}.{criterion}"
LONGCAP_SPLITS = {"train": "train", "validation": "val", "testA": "dci_val", "testB": "dci_test"}
LONGCAP_CRITERIA = {"descriptiveness": "desc", "relevance": "rel", "fluency": "flu"}
LONGCAP_COLUMNS = {"image_name": "file_name", "image": "image", "references": "refs", "text": "cand", "score": "score"}
# Paper figures (approximate by the issue's own warning; not used as hard checks).
LONGCAP_PAPER_COUNTS = {"train": 11971, "validation": 1309, "testA": 294, "testB": 324}

# --- Flickr8k-Expert / Flickr8k-CF (Hodosh et al. 2013) ---------------------------------------------
FLICKR8K_FILES = {
    "token": "Flickr8k.token.txt",
    "expert": "ExpertAnnotations.txt",
    "crowdflower": "CrowdFlowerAnnotations.txt",
    "expert_json": "flickr8k.json",
    "crowdflower_json": "crowdflower_flickr8k.json",
    "images": "Flicker8k_Dataset",  # sic: the original archive's folder name
}
# A widely used public mirror of Flickr8k_text.zip (annotations only). Not reachable from here.
FLICKR8K_URLS = {"text_zip": "https://github.com/jbrownlee/Datasets/releases/download/Flickr8k/Flickr8k_text.zip"}
# 5,822 expert-rated pairs; 158 whose caption is one of the image's own references are dropped
# (SPICE / CLIPScore protocol) -> 5,664 pairs x 3 experts = 16,992 judgments.
FLICKR8K_EXPERT_COUNTS = {"test": 5664, "judgments": 16992}
FLICKR8K_CF_COUNTS: dict[str, int] = {}  # no upstream count verified here

# --- Composite (Aditya et al. 2018) -----------------------------------------------------------------
COMPOSITE_HOMEPAGE = "https://imagesdg.wordpress.com/image-to-scene-description-graph/"
COMPOSITE_URLS: dict[str, str] = {}
# subset -> (correctness CSV, number of candidate captions per row, image folder under data_dir)
COMPOSITE_FILES = {
    "flickr8k": ("8k_correctness.csv", 3, "Flicker8k_Dataset"),
    "flickr30k": ("30k_correctness.csv", 4, "flickr30k_images"),
    "coco": ("coco_correctness.csv", 4, "val2014"),
}
COMPOSITE_CSV = {"sep": ";", "image_url": "Input.image_url", "text": "Input.text{}", "answer": "Answer.Q{}Answer"}
COMPOSITE_COUNTS: dict[str, int] = {}  # the paper reports ~12K judgments; exact per-file counts unverified

# --- Pascal-50S (Vedantam et al. 2015, CIDEr) ---------------------------------------------------------
PASCAL50S_HOMEPAGE = "https://vrama91.github.io/cider/"
PASCAL50S_URLS: dict[str, str] = {}
PASCAL50S_FILES = {"pairs": "pair_pascal.mat", "votes": "consensus_pascal.mat", "images": "JPEGImages"}
PASCAL50S_CATEGORIES = {1: "HC", 2: "HI", 3: "HM", 4: "MM"}
PASCAL50S_COUNTS = {"test": 4000, "per_category": 1000, "votes_per_pair": 48}

# --- FOIL (Shekhar et al. 2017) -----------------------------------------------------------------------
FOIL_HOMEPAGE = "https://foilunitn.github.io/"
FOIL_URLS: dict[str, str] = {}
FOIL_FILES = {"foil": "foilv1.0_test_2017.json", "coco_captions": "captions_val2014.json", "images": "val2014"}
FOIL_IMAGE_NAME = "COCO_val2014_{:012d}.jpg"
FOIL_COUNTS: dict[str, int] = {}  # unverified here

# --- THumB 1.0 (Kasai et al. 2022) ----------------------------------------------------------------------
THUMB_REPO = "https://github.com/jungokasai/THumB"
THUMB_URLS = {
    "scores": "https://raw.githubusercontent.com/jungokasai/THumB/master/mscoco/mscoco_THumB-1.0.jsonl",
    "references": "https://raw.githubusercontent.com/jungokasai/THumB/master/mscoco/mscoco_references.jsonl",
}
THUMB_FILES = {"scores": "mscoco_THumB-1.0.jsonl", "references": ["mscoco_references.jsonl", "mscoco_references.json"],
               "images": "val2014"}
# mscoco/README.md: "500 captions are evaluated for every model".
THUMB_COUNTS = {"per_system": 500}

# What was checked against real upstream files from here (nothing could be downloaded):
VERIFIED: dict[str, Any] = {
    "mmhe": "layout ASSUMED (release not visible here); counts from the paper",
    "longcap_arena": "columns/split names from the project lead's notes; train/val prefixes assumed",
    "flickr8k_expert": "file layouts from public preprocessing code (CLIPScore); counts derived from it",
    "flickr8k_cf": "file layouts from public preprocessing code; no count",
    "composite": "CSV columns from public evaluation code; no count",
    "pascal50s": "MAT fields from public evaluation code; 4x1000 pairs, 48 votes each",
    "foil": "JSON fields from public evaluation code; no count",
    "thumb": "JSONL fields from the upstream README; references file name uncertain",
}
