"""EXPERT: its reading of the score, its prompts and conversation, the LoRA adapter, and the metric against the
authors' procedure taken literally (tests/helpers/expert_reference.py) on scripted tiny LLaVAs."""

import math
from pathlib import Path

import pytest
import torch
from PIL import Image

import mmjudge
from expert_reference import SCORE_PROMPT, expert_reference, llava_v0_prompt, load_reference_model
from mmjudge.judges.conversations import render_conversation
from mmjudge.judges.requests import Turn
from mmjudge.metrics.expert import EXPERT, EXPLANATION_PROMPT, printed_number, smoothed
from mmjudge.metrics.expert.metric import pad_to_square
from mmjudge.testing import tiny_answering_llava

IMAGES = [Image.new("RGB", (40, 30), "red"), Image.new("RGB", (24, 36), "blue"), Image.new("RGB", (32, 32), "green")]
TEXTS = ["A dog  runs.", "Two people ride bikes down a street.", "A cat sits on a mat."]


def onehot(d, p=1.0):
    return [p if k == d else 0.0 for k in range(10)]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return {a: tiny_answering_llava(tmp_path_factory.mktemp("m"), a) for a in (" 0.85", "1.0", " 0.05", " 0.80")}


@pytest.fixture(scope="module")
def adapter(models, tmp_path_factory):
    """A random LoRA adapter saved by peft, on the language model's attention and MLP projections."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    torch.manual_seed(0)
    base = AutoModelForImageTextToText.from_pretrained(models[" 0.85"])
    config = LoraConfig(
        r=4, lora_alpha=8, init_lora_weights=False, target_modules=r".*language_model.*\.(q_proj|v_proj|down_proj)"
    )
    wrapped = get_peft_model(base, config)
    with torch.no_grad():  # small enough to keep the scripted answers, large enough to move the probabilities
        for name, param in wrapped.named_parameters():
            if "lora_B" in name:
                param.mul_(0.5)
    folder = tmp_path_factory.mktemp("adapter")
    wrapped.save_pretrained(folder)
    return str(folder)


# ------------------------------------------------------------------------------------------ reading
def test_printed_number_is_the_authors_digits_and_dots():
    assert printed_number(" 0.85") == 0.85
    assert printed_number("Score: 0.7.") == 0.7  # the trailing dot is stripped
    assert printed_number("..0.5") == 0.5
    assert printed_number("0.85 (out of 1)") == 0.851  # every digit of the answer joins the number
    assert printed_number("0.8, 0.9") is None  # "0.80.9" is no float
    assert printed_number("It is good.") is None
    assert printed_number("7") is None and printed_number("1.5") is None  # outside [0, 1]


def test_smoothing_reads_the_authors_positions():
    # "0.85": first decimal at the 8, second at the 5
    probs = [onehot(0), [0.0] * 10, onehot(8, 0.5) + [], onehot(5)]
    probs[2][7] = 0.5
    assert smoothed(0.85, [0, None, 8, 5], probs) == pytest.approx(0.5 * 0.8 + 0.5 * 0.7 + 0.05)
    # "0.05": the first decimal is the second "0" token; its distribution, not the leading zero's, is read
    probs = [onehot(3), [0.0] * 10, onehot(1), onehot(5)]
    assert smoothed(0.05, [0, None, 0, 5], probs) == pytest.approx(0.1 + 0.05)
    # "0.80" prints as 0.8: no second decimal is added (FLEUR would add the 0's expectation)
    probs = [onehot(0), [0.0] * 10, onehot(8), onehot(9)]
    assert smoothed(0.8, [0, None, 8, 0], probs) == pytest.approx(0.8)
    # "1.0": 0.9 p(0) + p(1) at the one "1"
    assert smoothed(1.0, [1, None, 0], [[0.3, 0.6] + [0.0] * 8, [0.0] * 10, onehot(0)]) == pytest.approx(0.87)
    # where the authors' script fails: a digit never generated as its own token, several "1"s, 1e-05
    assert smoothed(0.85, [None, None, None, 5], [onehot(0)] * 4) is None
    assert smoothed(1.0, [1, 1], [onehot(1)] * 2) is None
    assert smoothed(1e-05, [1], [onehot(1)]) is None
    with pytest.raises(ValueError, match="one digit row per generated token"):
        smoothed(0.5, [5], [])


def test_prompts_and_conversation_are_the_authors():
    assert EXPERT.spec_for().label == "EXPERT"
    prompt = SCORE_PROMPT.format("A dog runs.")
    assert mmjudge.metrics.expert.SCORE_PROMPT.format(caption="A dog runs.") == prompt
    assert EXPLANATION_PROMPT.endswith(
        "Relevance: {{Provide explanation here.}}\nDescriptiveness: {{Provide explanation here.}}"
    )
    turns = [Turn("user", prompt), Turn("assistant", "0.81</s>"), Turn("user", "Why?")]
    assert render_conversation("llava_v0", turns, image_token="<image>") == llava_v0_prompt(
        [("Human", "<image>\n" + prompt), ("Assistant", "0.81</s>"), ("Human", "Why?"), ("Assistant", None)]
    )
    padded = pad_to_square(Image.new("RGB", (3, 7), "white"))
    assert (
        padded.size == (7, 7) and padded.getpixel((0, 0)) == (122, 116, 104) and padded.getpixel((2, 3)) == (255,) * 3
    )


# ------------------------------------------------------------------------------------- the metric
@pytest.mark.parametrize("answer,number", [(" 0.85", 0.85), ("1.0", 1.0), (" 0.05", 0.05), (" 0.80", 0.8)])
def test_equals_the_literal_procedure_with_a_lora_adapter(models, adapter, answer, number):
    expert = EXPERT(model=models[answer], adapter=adapter, cache=False)
    out = expert.compute(predictions=TEXTS, images=IMAGES, progress=False)
    model, processor = load_reference_model(models[answer], adapter)
    reference = [expert_reference(model, processor, t, i) for t, i in zip(TEXTS, IMAGES)]
    assert [r["number"] for r in reference] == [number] * 3 == out["raw_score"]
    assert out["score"] == pytest.approx([r["score"] for r in reference], abs=1e-6)
    assert out["score_status"] == ["ok"] * 3
    assert len({round(s, 7) for s in out["score"]}) == 3  # the image and caption matter
    plain = EXPERT(model=models[answer], adapter=None, cache=False).compute(
        predictions=TEXTS, images=IMAGES, progress=False
    )
    assert all(abs(a - b) > 1e-4 for a, b in zip(plain["score"], out["score"]))  # the adapter matters


def test_a_digit_the_tokenizer_merges_is_no_score_as_in_the_authors_script(tmp_path):
    """This tokenizer writes " 1" as one token, which is not ``encode("1")[-1]``: the authors' search for the "1"
    finds nothing and their script fails on the item; EXPERT reports no_rating (the literal procedure: NaN)."""
    model_dir = tiny_answering_llava(tmp_path, " 1.0")
    out = EXPERT(model=model_dir, adapter=None, cache=False).compute(
        predictions=TEXTS[:1], images=IMAGES[:1], progress=False
    )
    model, processor = load_reference_model(model_dir, None)
    assert math.isnan(expert_reference(model, processor, TEXTS[0], IMAGES[0])["score"])
    assert math.isnan(out["score"][0]) and out["score_status"] == ["no_rating"] and out["raw_score"] == [1.0]
    assert "not tokens EXPERT can read" in out["score_note"][0]


def test_llava_layout_adapter_and_projector(models, adapter, tmp_path):
    """The adapter as LLaVA's trainer saves it (its own module names, short target names, the retrained
    projector in non_lora_trainables.bin) gives what peft's layout gives on the same weights."""
    import json

    from safetensors.torch import load_file

    folder = tmp_path / "llava_layout"
    folder.mkdir()
    state = load_file(f"{adapter}/adapter_model.safetensors")
    renamed = {
        k.replace("base_model.model.model.language_model.", "base_model.model.model."): v for k, v in state.items()
    }
    torch.save(renamed, folder / "adapter_model.bin")
    config = json.loads(Path(adapter, "adapter_config.json").read_text())
    config["target_modules"] = ["q_proj", "v_proj", "down_proj"]
    (folder / "adapter_config.json").write_text(json.dumps(config))
    torch.manual_seed(1)
    model, processor = load_reference_model(models[" 0.85"], adapter)
    projector = {
        f"base_model.model.model.mm_projector.{k}.{w}": torch.randn_like(
            getattr(model.model.multi_modal_projector, layer).get_parameter(w)
        )
        * 0.2
        for k, layer in (("0", "linear_1"), ("2", "linear_2"))
        for w in ("weight", "bias")
    }
    torch.save(projector, folder / "non_lora_trainables.bin")
    with torch.no_grad():
        for key, value in projector.items():
            k, w = key.split(".")[-2:]
            getattr(model.model.multi_modal_projector, {"0": "linear_1", "2": "linear_2"}[k]).get_parameter(w).copy_(
                value
            )
    out = EXPERT(model=models[" 0.85"], adapter=str(folder), cache=False).compute(
        predictions=TEXTS, images=IMAGES, progress=False
    )
    reference = [expert_reference(model, processor, t, i)["score"] for t, i in zip(TEXTS, IMAGES)]
    assert out["score"] == pytest.approx(reference, abs=1e-6)
    peft_layout = EXPERT(model=models[" 0.85"], adapter=adapter, cache=False).compute(
        predictions=TEXTS, images=IMAGES, progress=False
    )
    assert all(abs(a - b) > 1e-5 for a, b in zip(peft_layout["score"], out["score"]))  # the projector was loaded


def test_explanation_turn_signature_and_cache(models, adapter, tmp_path, monkeypatch):
    expert = EXPERT(model=models[" 0.85"], adapter=adapter, cache=tmp_path / "c.sqlite")
    seen = []
    generate = expert.judge.generate
    monkeypatch.setattr(
        expert.judge,
        "generate",
        lambda requests, progress=True: seen.extend(requests) or generate(requests, progress=progress),
    )
    out = expert.compute(predictions=TEXTS[:1], images=IMAGES[:1], explain=True, progress=False)
    assert out["explanation"] == ["0.85"] and out["fluency_explanation"] == [None]  # the scripted model's reply
    [request] = seen
    answer = repr(float(torch.tensor(out["score"][0], dtype=torch.float32))) + "</s>"
    assert [t.text for t in request.turns] == [
        SCORE_PROMPT.format("A dog runs."),
        answer,
        EXPLANATION_PROMPT.format(caption="A dog runs."),
    ]
    assert request.conversation == "llava_v0" and request.stop == ("###",) and request.image.size == (40, 40)
    signature = out["signature"]
    assert "metric=expert" in signature and "conversation=llava_v0" in signature and "adapter=local@local-" in signature
    again = expert.compute(predictions=TEXTS[:1], images=IMAGES[:1], progress=False)
    assert again["score"] == out["score"] and expert.judge.hits > 0


def test_errors_are_one_line(models, tmp_path):
    with pytest.raises(FileNotFoundError, match="has no adapter_config.json"):
        EXPERT(model=models[" 0.85"], adapter=str(tmp_path), cache=False)
    with pytest.raises(ValueError, match="adapter=None"):
        EXPERT(judge="dummy", adapter=str(tmp_path), cache=False)
    with pytest.raises(mmjudge.judges.base.JudgeCapabilityError, match="full_distribution"):
        EXPERT(judge="dummy", full_distribution=False, cache=False)
    out = EXPERT(judge="dummy", cache=False).compute(predictions=["a"], images=[IMAGES[0]], progress=False)
    assert out["score_status"] == ["no_rating"] and math.isnan(out["score"][0])


@pytest.mark.parametrize("name", ["adapter_model.safetensors", "adapter_model.bin", "non_lora_trainables.bin"])
def test_a_damaged_adapter_file_is_one_line_at_the_cli(models, adapter, tmp_path, capsys, name):
    """An interrupted download: the file is there but cut short (or not weights at all)."""
    import shutil

    from mmjudge.cli import main

    folder = tmp_path / "damaged"
    shutil.copytree(adapter, folder)
    if name == "adapter_model.bin":
        (folder / "adapter_model.safetensors").unlink()
    whole = Path(adapter, "adapter_model.safetensors").read_bytes()
    (folder / name).write_bytes(whole[: len(whole) // 2] if name.endswith(".safetensors") else b"PK\x03\x04cut")
    Image.new("RGB", (16, 16)).save(tmp_path / "x.png")
    argv = ["score", "--metric", "expert", "--model", models[" 0.85"], "--set", f"adapter={folder}", "--no-cache"]
    assert main([*argv, "--text", "a dog", "--image", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err  # (transformers' own progress bars come first)
    assert "Traceback" not in err and [line for line in err.splitlines() if "error" in line.lower()] == [
        err.strip().splitlines()[-1]
    ]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"mmjudge score: error: The adapter file '{folder / name}' cannot be read (")
