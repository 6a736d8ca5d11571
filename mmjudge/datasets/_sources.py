"""Where every benchmark comes from, in ONE place, so a moved file or a renamed field is a one-line fix.

Each entry says which files a local ``data_dir`` must hold (``LAYOUTS``: the original release and, for
the caption sets, the preprocessed JSON file that FLEUR's and PAC-S's evaluation code reads), which
public URLs (if any) the loader downloads when no ``data_dir`` is given, the counts the upstream itself
publishes (used by validation unless a caller passes ``expected_counts``) and whether that mapping could
be checked against the real upstream files (the machine this code was written on reached no Hub and no
authors' pages, only public repositories; see ``VERIFIED``).
"""

from __future__ import annotations

from typing import Any

from mmjudge.datasets._layouts import Layout

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
# Where images are looked for (rows name them FLICKR8K_FILES["images"]/<file> in every layout); the JSON
# files say Flickr8k_Dataset/, PAC-S reads images/.
FLICKR8K_IMAGE_FOLDERS = ("Flicker8k_Dataset", "Flickr8k_Dataset", "Images", "images")
# A widely used public mirror of Flickr8k_text.zip (annotations only). Not reachable from here.
FLICKR8K_URLS = {"text_zip": "https://github.com/jbrownlee/Datasets/releases/download/Flickr8k/Flickr8k_text.zip"}
# 5,822 expert-rated pairs; 158 whose caption is one of the image's own references are dropped
# (SPICE / CLIPScore protocol) -> 5,664 pairs x 3 experts = 16,992 judgments.
FLICKR8K_EXPERT_COUNTS = {"test": 5664, "judgments": 16992}
FLICKR8K_CF_COUNTS: dict[str, int] = {}  # no upstream count verified here

# --- Hub Parquet copies (as CaptionEvalKit reads them: capevalkit/infrastructure/benchmarks/legacy.py) -------
# Columns: image name `imgid` (or `file_name` / `id` / the image's path), image `img` ({bytes, path}),
# caption `cand` (or `mt` / `caption`), references `refs` (a list, or its Python literal as a string),
# human score `human_score` (or `score`). Flickr8k-HumanEval has the configurations `expert` and `crowdflower`.
HUB_COMPOSITE_REPO = "yuwd/Composite"
HUB_FLICKR8K_REPO = "yuwd/Flickr8k-HumanEval"
HUB_FLICKR8K_CONFIGS = {"expert": "expert", "cf": "crowdflower"}

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
# composite.json (FLEUR's annotations/, read by its fleur_com.py): {subset: [{"image": "<folder>/<file>",
# "caption": str, "human": 1-5}]}, subsets flickr8k, flickr30k, coco. FLEUR's own result file for it
# (results/fleur_composite.txt) scores 2,991 + 2,973 + 6,021 = 11,985 captions.
COMPOSITE_JSON = {"file": "composite.json", "image": "image", "text": "caption", "score": "human"}
# Folders searched for a subset's images (the CSV layout names the first; composite.json the second).
COMPOSITE_IMAGE_FOLDERS = {
    "flickr8k": ("Flicker8k_Dataset", "Flickr8k_Dataset"),
    "flickr30k": ("flickr30k_images", "Flickr30k_Dataset"),
    "coco": ("val2014",),
}
COMPOSITE_COUNTS: dict[str, int] = {}  # the paper reports ~12K judgments; exact per-file counts unverified

# --- Pascal-50S (Vedantam et al. 2015, CIDEr) ---------------------------------------------------------
PASCAL50S_HOMEPAGE = "https://vrama91.github.io/cider/"
PASCAL50S_URLS: dict[str, str] = {}
PASCAL50S_FILES = {"pairs": "pair_pascal.mat", "votes": "consensus_pascal.mat", "images": "JPEGImages"}
PASCAL50S_CATEGORIES = {1: "HC", 2: "HI", 3: "HM", 4: "MM"}
# pascal_50s.json (FLEUR's annotations/, read by its fleur_pascal.py): {"HC"|"HI"|"HM"|"MM": [{"image":
# "VOC2012/JPEGImages/<file>", "captions": [a, b], "label": index of the caption humans preferred,
# "references": [5 sentences]}]}, 1,000 per category.
PASCAL50S_JSON = {
    "file": "pascal_50s.json",
    "image": "image",
    "captions": "captions",
    "label": "label",
    "references": "references",
}
PASCAL50S_IMAGE_FOLDERS = (
    "JPEGImages",
    "VOC2012/JPEGImages",
    "VOCdevkit/VOC2012/JPEGImages",
    "VOCdevkit/VOC2010/JPEGImages",
)
PASCAL50S_COUNTS = {"test": 4000, "per_category": 1000, "votes_per_pair": 48}

# --- FOIL (Shekhar et al. 2017) -----------------------------------------------------------------------
FOIL_HOMEPAGE = "https://foilunitn.github.io/"
FOIL_URLS: dict[str, str] = {}
FOIL_FILES = {"foil": "foilv1.0_test_2017.json", "coco_captions": "captions_val2014.json", "images": "val2014"}
FOIL_IMAGE_NAME = "COCO_val2014_{:012d}.jpg"
# foil.json (FLEUR's annotations/): its blob is in no mirror and no published code reads it by name. FLEUR's
# one pair-accuracy script (fleur_pascal.py) takes the file as --input_json, and FLEUR's FOIL results were
# written under that script's naming (results/fleur_foil.txt), so the layout read here is the Pascal one:
# {category: [{"image", "captions": [a, b], "label": index of the correct caption, "references"?}]}.
# An ASSUMPTION until the real file is seen.
FOIL_JSON = {
    "file": "foil.json",
    "image": "image",
    "captions": "captions",
    "label": "label",
    "references": "references",
}
FOIL_COUNTS: dict[str, int] = {}  # unverified here

# --- Nebula (Matsuda et al., DENEB) and Polaris (Wada et al., Polos) --------------------------------------
NEBULA_REPO = "Ka2ukiMatsuda/Nebula"
NEBULA_COLUMNS = ("file_name", "image", "refs", "mt", "human_score")
# The published correction of Nebula's test-split scores (arXiv:2512.21582): Hub `hiranohachiman/Spica`, one
# CSV per split with `imgid`, `mt` and `score`; a Nebula test row whose (image file stem, whitespace-squashed
# `mt`) matches takes the mean `score` of the matching Spica rows (of all three files), as CaptionEvalKit
# applies it. Other splits are not changed.
SPICA_REPO = "hiranohachiman/Spica"
SPICA_FILES = ("spica_train.csv", "spica_val.csv", "spica_test.csv")
SPICA_COLUMNS = {"image": "imgid", "text": "mt", "score": "score"}
POLARIS_REPO = "yuwd/Polaris"
POLARIS_COLUMNS = ("refs", "cand", "img", "human_score")
# Split names as a Hub repository spells them in its files: <split>-*.parquet, or a folder per split.
HUB_SPLITS = {"train": ("train",), "validation": ("validation", "val"), "test": ("test",)}

# --- DetailCaps-4870 (Dong et al. 2024, the CAPTURE paper) ------------------------------------------------
# One Parquet file, one row per image (columns as lmms-eval's detailcaps task and public loaders read them);
# licence cc-by-nc-sa-4.0 (the Hub card).
DETAILCAPS_REPO = "foundation-multimodal-models/DetailCaps-4870"
DETAILCAPS_COLUMNS = {"image": "image", "source": "source", "binary": "binary", "scores": "GPT4_Eval"}
DETAILCAPS_REFERENCES = ("GT_Caption_GPT4O", "GT_Caption_GPT4V", "GT_Caption_Gemini15Pro")
DETAILCAPS_MODELS = ("CogVLM", "ShareCaptioner", "LLaVA_v15")

# --- THumB 1.0 (Kasai et al. 2022) ----------------------------------------------------------------------
THUMB_REPO = "https://github.com/jungokasai/THumB"
THUMB_URLS = {
    "scores": "https://raw.githubusercontent.com/jungokasai/THumB/master/mscoco/mscoco_THumB-1.0.jsonl",
    "references": "https://raw.githubusercontent.com/jungokasai/THumB/master/mscoco/mscoco_references.jsonl",
}
THUMB_FILES = {
    "scores": "mscoco_THumB-1.0.jsonl",
    "references": ["mscoco_references.jsonl", "mscoco_references.json"],
    "images": "val2014",
}
# mscoco/README.md: "500 captions are evaluated for every model".
THUMB_COUNTS = {"per_system": 500}

# --- Layouts: what a data_dir must hold, and where the files come from --------------------------------
FLEUR_ANNOTATIONS = "annotations/ of github.com/Yebin46/FLEUR"
LAYOUTS: dict[str, tuple[Layout, ...]] = {
    "flickr8k_expert": (
        Layout(
            "original",
            ((FLICKR8K_FILES["expert"],), (FLICKR8K_FILES["token"],)),
            "Flickr8k_text.zip of the Flickr8k release, hockenmaier.cs.illinois.edu/8k-pictures.html",
        ),
        Layout(
            "json",
            ((FLICKR8K_FILES["expert_json"],),),
            f"{FLEUR_ANNOTATIONS}; the same file PAC-S reads, github.com/aimagelab/pacscore",
        ),
        Layout(
            "parquet",
            (),
            f"the Hub dataset {HUB_FLICKR8K_REPO}, configuration expert",
            parquet=HUB_FLICKR8K_CONFIGS["expert"],
        ),
    ),
    "flickr8k_cf": (
        Layout(
            "original",
            ((FLICKR8K_FILES["crowdflower"],), (FLICKR8K_FILES["token"],)),
            "Flickr8k_text.zip of the Flickr8k release, hockenmaier.cs.illinois.edu/8k-pictures.html",
        ),
        Layout(
            "json",
            ((FLICKR8K_FILES["crowdflower_json"],),),
            f"{FLEUR_ANNOTATIONS}; the same file PAC-S reads, github.com/aimagelab/pacscore",
        ),
        Layout(
            "parquet",
            (),
            f"the Hub dataset {HUB_FLICKR8K_REPO}, configuration crowdflower",
            parquet=HUB_FLICKR8K_CONFIGS["cf"],
        ),
    ),
    "composite": (
        Layout(
            "original",
            (tuple(f for f, _, _ in COMPOSITE_FILES.values()),),
            f"the Composite release, {COMPOSITE_HOMEPAGE}",
        ),
        Layout("json", ((COMPOSITE_JSON["file"],),), FLEUR_ANNOTATIONS),
        Layout("parquet", (), f"the Hub dataset {HUB_COMPOSITE_REPO}", parquet=""),
    ),
    "pascal50s": (
        Layout(
            "original",
            ((PASCAL50S_FILES["pairs"],), (PASCAL50S_FILES["votes"],)),
            f"pyCIDErConsensus of the CIDEr release, {PASCAL50S_HOMEPAGE}",
        ),
        Layout("json", ((PASCAL50S_JSON["file"],),), FLEUR_ANNOTATIONS),
    ),
    "foil": (
        Layout(
            "original",
            ((FOIL_FILES["foil"],),),
            f"{FOIL_HOMEPAGE}; references from MSCOCO captions_val2014.json",
            optional=(FOIL_FILES["coco_captions"],),
        ),
        Layout("json", ((FOIL_JSON["file"],),), FLEUR_ANNOTATIONS, optional=(FOIL_FILES["coco_captions"],)),
    ),
    "thumb": (
        Layout("original", ((THUMB_FILES["scores"],), tuple(THUMB_FILES["references"])), f"mscoco/ of {THUMB_REPO}"),
    ),
    "mmhe": (Layout("original", (tuple(MMHE_FILES["annotations"]),), f"the authors' release, {MMHE_HOMEPAGE}"),),
    "nebula": (
        Layout(
            "parquet",
            (),
            f"the Hub dataset {NEBULA_REPO}; test-score correction from {SPICA_REPO}",
            optional=SPICA_FILES,
            parquet="",
        ),
    ),
    "polaris": (Layout("parquet", (), f"the Hub dataset {POLARIS_REPO}", parquet=""),),
    "detailcaps": (Layout("parquet", (), f"the Hub dataset {DETAILCAPS_REPO}", parquet=""),),
}

# What was checked against real upstream files (from public mirrors; nothing else could be downloaded):
VERIFIED: dict[str, Any] = {
    "mmhe": "layout ASSUMED (release not visible here); counts from the paper",
    "longcap_arena": "columns/split names from the project lead's notes; train/val prefixes assumed",
    "flickr8k_expert": "flickr8k.json loaded from FLEUR's real file (5,664 rows, 16,992 judgments); text-file layout "
    "from public preprocessing code (CLIPScore), on fixtures only; Hub Parquet columns from CaptionEvalKit's loader, "
    "on fixtures only",
    "flickr8k_cf": "both layouts from public preprocessing code (CLIPScore), on fixtures only; Hub Parquet columns "
    "from CaptionEvalKit's loader, on fixtures only; no count",
    "composite": "CSV columns from public evaluation code; composite.json from FLEUR's fleur_com.py; Hub Parquet "
    "columns from CaptionEvalKit's loader; fixtures only; no count",
    "pascal50s": "pascal_50s.json loaded from FLEUR's real file (4 x 1,000 pairs); MAT fields from public evaluation "
    "code, on fixtures only (48 votes each)",
    "foil": "release JSON fields from public evaluation code; foil.json layout ASSUMED (no copy or reader found); "
    "fixtures only; no count",
    "thumb": "JSONL fields from the upstream README; references file name uncertain",
    "nebula": "columns from CaptionEvalKit's loader (legacy.py) and the project notes; the Spica correction as "
    "CaptionEvalKit applies it; split file names assumed (<split>-*.parquet or a folder per split); fixtures only; "
    "no count",
    "polaris": "columns from CaptionEvalKit's loader (legacy.py); split file names assumed; fixtures only; no count",
    "detailcaps": "columns from public loaders (lmms-eval's detailcaps task: the three GT_Caption_* references; a "
    "public loader: binary, the candidate columns, GPT4_Eval); the file itself not read here; fixtures only",
}
