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
# The authors' CSV files, one per (criterion, upstream split), as CaptionEvalKit reads them locally
# (capevalkit/infrastructure/benchmarks/legacy.py: desc_dci_val.csv … flu_dci_test.csv, columns imgid, mt (or
# cand), refs (a Python list literal), score; images in an images/ folder beside them). train/val names are
# assumed by analogy (no reader of them was found).
LONGCAP_CSV = "{criterion}_{prefix}.csv"
LONGCAP_CSV_COLUMNS = {
    "image_name": ("imgid", "image", "image_path"),
    "text": ("mt", "cand"),
    "references": ("refs",),
    "score": ("score",),
}
LONGCAP_IMAGE_FOLDER = "images"
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

# --- Benchmarks of judges: an image, a prompt (none for captions), two or more responses, a human preference ------
# VL-RewardBench (Li et al., CVPR 2025): Hub `MMInstruction/VL-RewardBench`, one split `test` of 1,250 pairs in
# data/test-00000-of-00001.parquet (older copies: test/<source>.parquet, dataset.parquet). `human_ranking` [0, 1]:
# the first response is preferred; `image` a {bytes, path} struct. Optional columns were removed upstream over time,
# so the schema is read at load time.
VLRB_REPO = "MMInstruction/VL-RewardBench"
VLRB_REQUIRED = ("id", "query", "response", "image", "human_ranking")
VLRB_OPTIONAL = ("query_source", "models", "ground_truth")
VLRB_COUNTS = {"test": 1250}
# cal.py (github.com/vl-rewardbench/VL_RewardBench @ 9b10abd): the id prefix (text before the first `_` or `-`) names
# the source dataset, each dataset belongs to one reported group. We read `query_source` first (squashed to
# lower-case letters and digits), the id prefix when the source is none of these.
VLRB_ID_PREFIXES = {
    "RLAIF": "rlaif-v",
    "RLHF": "rlhf-v",
    "mathverse": "reasoning_tasks",
    "mmmu": "reasoning_tasks",
    "wildvision": "wildvision-battle",
    "hallucination": "povid",  # since 91b241e (May 2025); before, POVID fell through to vlfeedback (general)
}
VLRB_DEFAULT_DATASET = "vlfeedback"
VLRB_SOURCES = {
    "wildvision": "wildvision-battle",
    "wildvisionbattle": "wildvision-battle",
    "vlfeedback": "vlfeedback",
    "povid": "povid",
    "rlaifv": "rlaif-v",
    "rlhfv": "rlhf-v",
    "mmmupro": "reasoning_tasks",
    "mmmu": "reasoning_tasks",
    "mathverse": "reasoning_tasks",
    "reasoningtasks": "reasoning_tasks",
}
VLRB_GROUPS = {
    "vlfeedback": "general",
    "wildvision-battle": "general",
    "povid": "hallucination",
    "rlhf-v": "hallucination",
    "rlaif-v": "hallucination",
    "reasoning_tasks": "reasoning",
}

# Multimodal RewardBench (Yasunaga et al. 2025): github.com/facebookresearch/multimodal_rewardbench @ b4b92cd. Its
# scripts/0_download_data.py fetches the images into data/images/<source>/ and writes data/all_data.json (the
# prompts of some sources filled in); data/all_data_release.json is the committed file. No Hub copy by the authors.
MMRB_REPO = "https://github.com/facebookresearch/multimodal_rewardbench"
MMRB_FILES = ("all_data.json", "all_data_release.json")  # the first wins when both are there
MMRB_REQUIRED = ("ID", "Image", "Output1", "Output2", "Better", "Category")
MMRB_BETTER = {"Output1": 0, "Output2": 1}
# scripts/2_get_accuracy.py: these categories are reported split by the lower-cased ID's prefix.
MMRB_SPLIT_CATEGORIES = {
    "safety": ("pairs", "safety/bias", "safety/toxicity"),
    "reasoning": ("math", "reasoning/math", "reasoning/coding"),
}

# MLLM-as-a-Judge (Chen et al., ICML 2024): github.com/Dongping-Chen/MLLM-Judge,
# Dataset/Benchmark/{score,pair,batch}.jsonl with the images in Dataset/image/ (pair and score rows name them
# `0.jpg`, batch rows `image/200.jpg`). The human label is `human` in the full files and `human_answer` in the
# Lite / HQ ones (and in batch.jsonl): both are read.
MLLMJ_REPO = "https://github.com/Dongping-Chen/MLLM-Judge"
MLLMJ_FILES = {"pair": "pair.jsonl", "score": "score.jsonl", "batch": "batch.jsonl"}
MLLMJ_FOLDERS = ("Dataset/Benchmark", "Benchmark", "")  # where the files are looked for first, under data_dir
MLLMJ_IMAGE_FOLDERS = ("Dataset", "Dataset/image", "image", "")
MLLMJ_LABELS = ("human", "human_answer")
MLLMJ_PAIR_LABELS = {"A": 0.0, "B": 1.0, "C": 0.5}  # C: a tie

# Multi-Crit (Xiong et al., CVPR 2026): Hub `txiong23/Multi-Crit`, data/open_ended-* (1,000 rows) and data/reasoning-*
# (425 rows); one row per (prompt, response pair, criterion).
MULTICRIT_REPO = "txiong23/Multi-Crit"
MULTICRIT_SPLITS = ("open_ended", "reasoning")
MULTICRIT_REQUIRED = ("question_id", "question", "pred_a", "pred_b", "criterion", "preference")
MULTICRIT_OPTIONAL = ("image", "image_path", "model_a", "model_b", "split", "prompt_id")
MULTICRIT_COUNTS = {"open_ended": 1000, "reasoning": 425}
MULTICRIT_PREFERENCES = {"model_a": 0.0, "a": 0.0, "model_b": 1.0, "b": 1.0, "tie": 0.5, "equal": 0.5, "both": 0.5}

# CapArena (Cheng et al., ACL 2025 Findings): github.com/njucckevin/CapArena @ c251cdd reads data/eval/
# caparena_annots_eval.json (6,523 human battles, from a box.nju.edu.cn zip) and the 5,100 DOCCI images by `img`.
CAPARENA_REPO = "https://github.com/njucckevin/CapArena"
CAPARENA_FILE = "caparena_annots_eval.json"
CAPARENA_REQUIRED = ("img", "source1", "source2", "caption1", "caption2", "winner")
CAPARENA_COUNTS = {"test": 6523}
CAPARENA_HUMAN = "human"  # a battle with this source is skipped by the authors' judge agreement (cal_agreement)

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
    "vl_rewardbench": (Layout("parquet", (), f"the Hub dataset {VLRB_REPO}", parquet=""),),
    "mm_rewardbench": (
        Layout("original", (MMRB_FILES,), f"data/ of {MMRB_REPO}, after its scripts/0_download_data.py"),
    ),
    "mllm_judge": (Layout("original", (tuple(MLLMJ_FILES.values()),), f"Dataset/Benchmark/ of {MLLMJ_REPO}"),),
    "multi_crit": (Layout("parquet", (), f"the Hub dataset {MULTICRIT_REPO}", parquet=""),),
    "caparena": (Layout("original", ((CAPARENA_FILE,),), f"the human-battle zip linked from {CAPARENA_REPO}"),),
    "longcap_arena": (
        Layout("parquet", (), f"the Hub dataset {LONGCAP_REPO}", parquet=""),
        Layout(
            "csv",
            (
                tuple(
                    LONGCAP_CSV.format(criterion=short, prefix=LONGCAP_SPLITS[split])
                    for split in ("testA", "testB")
                    for short in LONGCAP_CRITERIA.values()
                ),
            ),
            "the authors' CSV files (what CaptionEvalKit reads locally), images in an `images/` folder beside them",
            optional=tuple(
                LONGCAP_CSV.format(criterion=short, prefix=LONGCAP_SPLITS[split])
                for split in ("train", "validation")
                for short in LONGCAP_CRITERIA.values()
            ),
        ),
    ),
    "detailcaps": (Layout("parquet", (), f"the Hub dataset {DETAILCAPS_REPO}", parquet=""),),
}

# What was checked against real upstream files (from public mirrors; nothing else could be downloaded):
VERIFIED: dict[str, Any] = {
    "mmhe": "layout ASSUMED (release not visible here); counts from the paper",
    "longcap_arena": "Parquet columns/split names from the project lead's notes and CaptionEvalKit's loader; CSV "
    "columns and test file names from CaptionEvalKit's loader (legacy.py); train/val prefixes (and so their CSV "
    "names) assumed; fixtures only",
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
    "vl_rewardbench": "columns and split size from the Hub card (1e7096f/60630ac); the group mapping from cal.py @ "
    "9b10abd; fixtures only (the Parquet file was not reachable here)",
    "mm_rewardbench": "record fields from the repository's README and scripts @ b4b92cd (all_data_release.json itself "
    "is larger than the snapshot kept); reporting categories from scripts/2_get_accuracy.py; fixtures only; no count",
    "mllm_judge": "pair fields read in Dataset/Benchmark/pair.jsonl and pair_lite.jsonl, score fields in "
    "score_lite.jsonl, batch fields and the best-to-worst letter ranking in Dataset/Benchmark/batch.jsonl and the "
    "authors' batch prompt; score.jsonl itself not seen (its fields assumed to be score_lite.jsonl's); fixtures "
    "only; no count",
    "multi_crit": "columns and split sizes from the Hub card (1e858f2); preference values other than model_a / model_b "
    "(a tie) not seen; fixtures only",
    "caparena": "fields from the authors' code (vlm_as_a_judge.py, caparena_metrics.py @ c251cdd); the file itself "
    "(box.nju.edu.cn) not reachable here; fixtures only",
    "detailcaps": "columns from public loaders (lmms-eval's detailcaps task: the three GT_Caption_* references; a "
    "public loader: binary, the candidate columns, GPT4_Eval); the file itself not read here; fixtures only",
}
