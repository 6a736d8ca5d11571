"""Long-CLIP / OpenAI CLIP conversion checked against an independent implementation (open_clip).

A tiny random OpenAI-format state dict is loaded into open_clip's CLIP; text features are computed the
Long-CLIP way (``positional_embedding`` at positions < 20, ``positional_embedding_res`` at ≥ 20, pooled at
the largest token id), image features with open_clip's ``encode_image``. The converted ``transformers``
``CLIPModel`` must give the same features (1e-5). Random weights: this proves the conversion, not quality.
"""

import subprocess
import sys

import pytest
import torch
from PIL import Image

from mmjudge.encoders.longclip import convert_longclip, load_state_dict, to_clip_model
from mmjudge.testing import tiny_clip
from mmjudge.tiny_models.checkpoints import openai_clip_state

open_clip = pytest.importorskip("open_clip")

VOCAB, TEXT_W, VISION_W, EMBED, PATCH, GRID = 300, 128, 128, 32, 8, 4


def openai_state_dict(positions: int = 248, long_clip: bool = True, seed: int = 0, vocab: int = VOCAB) -> dict:
    """A tiny random OpenAI-CLIP ViT state dict (widths 128 = 2 heads of 64, as open_clip infers), with
    Long-CLIP's second position table when ``long_clip``."""
    state = openai_clip_state(
        vocab, positions, width=TEXT_W, vision_width=VISION_W, patch=PATCH, grid=GRID, embed_dim=EMBED, seed=seed
    )
    if long_clip:
        gen = torch.Generator().manual_seed(seed + 1)
        state["positional_embedding_res"] = torch.randn(positions, TEXT_W, generator=gen) * 0.05
    return state


def open_clip_features(state: dict, ids: torch.Tensor, pixels: torch.Tensor):
    """Text features the Long-CLIP way and image features, from open_clip's modules (float32)."""
    from open_clip.model import build_model_from_openai_state_dict

    plain = {k: v.clone() for k, v in state.items() if k != "positional_embedding_res"}
    model = build_model_from_openai_state_dict(dict(plain), cast_dtype=None).float().eval()
    model.load_state_dict(plain)  # the builder loads into fp16 parameters first: reload the exact float32 values
    with torch.no_grad():
        positions = ids.shape[1]
        x = model.token_embedding(ids)
        if "positional_embedding_res" in state:
            mask1 = torch.zeros(positions, 1)
            mask1[:20] = 1
            mask2 = 1 - mask1
            x = x + state["positional_embedding"] * mask1 + state["positional_embedding_res"] * mask2
        else:
            x = x + state["positional_embedding"]
        x = model.transformer(x, attn_mask=model.attn_mask)
        x = model.ln_final(x)
        text = x[torch.arange(x.shape[0]), ids.argmax(dim=-1)] @ model.text_projection
        if "positional_embedding_res" not in state:  # the stock path must agree too
            torch.testing.assert_close(model.encode_text(ids), text, atol=1e-5, rtol=0)
        image = model.encode_image(pixels)
    return text, image


def token_ids(positions: int, lengths=(5, 30, None)) -> torch.Tensor:
    """Random token rows ending in <|endoftext|> (the largest id), zero-padded like OpenAI's tokenizer."""
    gen = torch.Generator().manual_seed(1)
    rows = []
    for n in lengths:
        n = positions if n is None else n
        row = torch.zeros(positions, dtype=torch.long)
        row[0] = VOCAB - 2
        row[1 : n - 1] = torch.randint(1, VOCAB - 2, (n - 2,), generator=gen)
        row[n - 1] = VOCAB - 1
        rows.append(row)
    return torch.stack(rows)


@pytest.mark.parametrize("positions,long_clip", [(248, True), (77, False)])
def test_converted_model_matches_open_clip(positions, long_clip):
    state = openai_state_dict(positions, long_clip)
    ids = token_ids(positions)
    pixels = torch.randn(2, 3, PATCH * GRID, PATCH * GRID, generator=torch.Generator().manual_seed(2))
    want_text, want_image = open_clip_features(state, ids, pixels)
    model = to_clip_model(state)
    assert model.config.text_config.max_position_embeddings == positions
    with torch.no_grad():
        mask = torch.ones_like(ids)  # causal attention: padding after <|endoftext|> cannot reach it
        got_text = model.get_text_features(input_ids=ids, attention_mask=mask).pooler_output
        got_image = model.get_image_features(pixel_values=pixels).pooler_output
    torch.testing.assert_close(got_text, want_text, atol=1e-5, rtol=0)
    torch.testing.assert_close(got_image, want_image, atol=1e-5, rtol=0)


def test_positions_past_20_come_from_the_res_table():
    state = openai_state_dict()
    table = to_clip_model(state).text_model.embeddings.position_embedding.weight
    assert torch.equal(table[:20], state["positional_embedding"][:20])
    assert torch.equal(table[20:], state["positional_embedding_res"][20:])


def test_convert_folder_loads_in_clip_encoder(tmp_path):
    from transformers import AutoTokenizer

    from mmjudge.encoders.clip import ClipEncoder

    tok = AutoTokenizer.from_pretrained(tiny_clip(tmp_path / "tok"))  # a tiny CLIP BPE tokenizer (77)
    state = openai_state_dict(vocab=len(tok))
    torch.save(state, tmp_path / "longclip-tiny.pt")
    out = convert_longclip(tmp_path / "longclip-tiny.pt", tmp_path / "converted", tokenizer=tmp_path / "tok")
    encoder = ClipEncoder(out, device="cpu")
    assert encoder.max_text_positions == 248
    assert AutoTokenizer.from_pretrained(out).model_max_length == 248
    long_text = " ".join(["a dog runs on the beach"] * 20)  # > 77 tokens, < 248
    vectors = encoder.encode_texts([long_text])
    model = to_clip_model(
        state, eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id, pad_token_id=tok.pad_token_id
    )
    ids = tok([long_text], return_tensors="pt")
    assert 77 < ids["input_ids"].shape[1] <= 248
    with torch.no_grad():
        direct = model.get_text_features(**ids).pooler_output
    direct = direct / direct.norm(dim=-1, keepdim=True)
    torch.testing.assert_close(torch.from_numpy(vectors), direct, atol=1e-5, rtol=0)
    assert encoder.encode_images([Image.new("RGB", (40, 50), "red")]).shape == (1, EMBED)


def test_bad_checkpoints_fail_clearly(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_state_dict(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a PyTorch checkpoint"):
        load_state_dict(tmp_path / "junk.pt")
    torch.save({"weight": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not an OpenAI-format ViT CLIP"):
        load_state_dict(tmp_path / "other.pt")


def test_cli_converts(tmp_path):
    torch.save({"state_dict": {f"module.{k}": v for k, v in openai_state_dict(77, False).items()}}, tmp_path / "c.pt")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mmjudge.cli",
            "convert-longclip",
            str(tmp_path / "c.pt"),
            str(tmp_path / "out"),
            "--no-tokenizer",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out" / "config.json").is_file()
    bad = subprocess.run(
        [sys.executable, "-m", "mmjudge.cli", "convert-longclip", str(tmp_path / "nope.pt"), str(tmp_path / "o2")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "mmjudge convert-longclip: error:" in bad.stderr and "does not exist" in bad.stderr
