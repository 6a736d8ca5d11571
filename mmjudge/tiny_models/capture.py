"""CAPTURE's tiny stand-ins: a random T5 scene-graph parser, a random sentence-transformers encoder and a tiny
NLTK data folder (Punkt parameters and a perceptron tagger of ours). They prove plumbing and exact arithmetic,
never quality: the parser writes random facts from its small vocabulary.

>>> import tempfile
>>> from transformers import AutoModelForSeq2SeqLM
>>> AutoModelForSeq2SeqLM.from_pretrained(tiny_scene_graph_parser(tempfile.mkdtemp())).config.model_type
't5'
"""

from __future__ import annotations

import json
from pathlib import Path

from mmjudge.tiny_models._tokenizers import PathLike, seed_all

# The words the tiny models know: a few captions' words and the parser's prompt.
WORDS = [
    "a",
    "an",
    "the",
    "two",
    "red",
    "blue",
    "green",
    "white",
    "black",
    "big",
    "small",
    "tall",
    "wooden",
    "dog",
    "dogs",
    "cat",
    "cats",
    "car",
    "cars",
    "automobile",
    "truck",
    "street",
    "road",
    "tree",
    "trees",
    "grass",
    "sky",
    "building",
    "buildings",
    "man",
    "woman",
    "person",
    "people",
    "clock",
    "tower",
    "ball",
    "table",
    "chair",
    "window",
    "is",
    "are",
    "on",
    "in",
    "near",
    "under",
    "with",
    "of",
    "and",
    "next",
    "to",
    "sits",
    "sitting",
    "runs",
    "running",
    "parked",
    "standing",
    "generate",
    "scene",
    "graph",
    ":",
    "(",
    ")",
    ",",
    ".",
    "image",
    "background",
]
_HEADS = [
    "dog",
    "dogs",
    "cat",
    "car",
    "cars",
    "automobile",
    "truck",
    "street",
    "tree",
    "grass",
    "sky",
    "building",
    "man",
    "woman",
    "clock",
    "tower",
    "ball",
    "table",
]
_STATES = ["red", "blue", "white", "big", "small", "tall", "wooden", "2", "full of"]
_LINKS = ["on", "near", "under", "next to", "sitting on"]


def _facts() -> list[str]:
    """Whole facts as single output tokens, each ending in the separator: a random parser then writes
    graph-shaped texts (attributes, quantities, relations, and its last fact cut off, as a long output is)."""
    facts = [f"({h},is,{s})," for i, h in enumerate(_HEADS) for j, s in enumerate(_STATES) if (i + j) % 3 == 0]
    facts += [f"({h},{r},{o})," for i, h in enumerate(_HEADS) for o in _HEADS[i + 1 :: 4] for r in _LINKS[i % 5 :][:1]]
    return facts + [f"({h})," for h in _HEADS[::3]]


# Tags of the tiny tagger (words not listed are nouns: its one weight says so).
_TAGS = {
    **dict.fromkeys(["a", "an", "the", "A", "An", "The"], "DT"),
    **dict.fromkeys(["two", "Two"], "CD"),
    **dict.fromkeys(["red", "blue", "green", "white", "black", "big", "small", "tall", "wooden"], "JJ"),
    **dict.fromkeys(["is", "are"], "VBZ"),
    **dict.fromkeys(["on", "in", "near", "under", "with", "of", "next", "to"], "IN"),
    **dict.fromkeys(["and"], "CC"),
    **dict.fromkeys(["sits", "sitting", "runs", "running", "parked", "standing"], "VBG"),
    **dict.fromkeys([".", ",", "(", ")", ":"], "."),
    **dict.fromkeys(["dogs", "cats", "cars", "trees", "buildings", "people"], "NNS"),
}


def _word_tokenizer(template: str):
    """A word-level tokenizer over :data:`WORDS` with T5's (``<pad>``, ``</s>``, ``<unk>``; and the facts the
    parser writes) or BERT's (``[PAD]``, ``[CLS]``, ``[SEP]``, ``[UNK]``) special tokens; ``template`` picks."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    t5 = template == "t5"
    specials = ["<pad>", "</s>", "<unk>"] if t5 else ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    vocab = {w: i for i, w in enumerate(specials + list(dict.fromkeys(WORDS + (_facts() if t5 else []))))}
    unk = "<unk>" if t5 else "[UNK]"
    tok = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Punctuation()])
    if t5:
        tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
        return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", unk_token=unk)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", unk_token=unk, cls_token="[CLS]", sep_token="[SEP]"
    )


def tiny_scene_graph_parser(directory: PathLike, seed: int = 0) -> str:
    """A 2-layer random T5 (``T5ForConditionalGeneration``) with a word-level tokenizer, in ``directory``."""
    from transformers import GenerationConfig, T5Config, T5ForConditionalGeneration

    out = Path(directory)
    tok = _word_tokenizer("t5")
    config = T5Config(
        vocab_size=len(tok),
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    seed_all(seed)
    model = T5ForConditionalGeneration(config)
    # Random weights never choose to stop: the end of text is made ever likelier after 6 tokens, and no word comes
    # twice, so a parse is a few varied words (and takes seconds, not minutes, on a CPU). Settings of the model's
    # own generation config: any code that calls its generate() gets the same texts.
    model.generation_config = GenerationConfig(
        decoder_start_token_id=0,
        eos_token_id=1,
        pad_token_id=0,
        exponential_decay_length_penalty=(6, 1.5),
        no_repeat_ngram_size=1,
    )
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def tiny_sentence_encoder(directory: PathLike, seed: int = 0) -> str:
    """A 2-layer random BERT saved as a sentence-transformers folder (mean pooling, then normalisation)."""
    from transformers import BertConfig, BertModel

    out = Path(directory)
    tok = _word_tokenizer("bert")
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=128,
        pad_token_id=0,
    )
    seed_all(seed)
    BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    files = {
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
        "sentence_bert_config.json": {"max_seq_length": 64, "do_lower_case": False},
        "1_Pooling/config.json": {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True},
    }
    for name, content in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(json.dumps(content, indent=1))
    (out / "2_Normalize").mkdir(exist_ok=True)
    return str(out)


def tiny_nltk_data(directory: PathLike) -> str:
    """An NLTK data folder with ``tokenizers/punkt_tab/english`` (no learned abbreviations or collocations) and
    ``taggers/averaged_perceptron_tagger_eng`` (a tag dictionary of :data:`WORDS`; any other word is a noun).
    WordNet is not in it: it comes from NLTK's usual places or Debian's ``wordnet-base``."""
    root = Path(directory)
    punkt = root / "tokenizers" / "punkt_tab" / "english"
    punkt.mkdir(parents=True, exist_ok=True)
    for name in ("collocations.tab", "sent_starters.txt", "abbrev_types.txt", "ortho_context.tab"):
        (punkt / name).write_text("")
    tagger = root / "taggers" / "averaged_perceptron_tagger_eng"
    tagger.mkdir(parents=True, exist_ok=True)
    name = "averaged_perceptron_tagger_eng"
    (tagger / f"{name}.weights.json").write_text(json.dumps({"bias": {"NN": 1.0}}))
    (tagger / f"{name}.tagdict.json").write_text(json.dumps(_TAGS))
    (tagger / f"{name}.classes.json").write_text(json.dumps(sorted({"NN", *_TAGS.values()})))
    return str(root)
