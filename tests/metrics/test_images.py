"""Shared image and box reading (mmjudge.images): what the metrics, the CLI, the widget and the Space
all go through. The CLIPScore case uses a tiny random CLIP: it proves plumbing, not quality."""

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest
from PIL import Image

from mmjudge.images import (
    HEADER_FORMATS,
    MAX_ASPECT_RATIO,
    ImageReadError,
    ImageTooLargeError,
    load_image,
    load_images,
    parse_box,
)


@pytest.mark.parametrize("text", ["10,20,30,40", "10 20 30 40", "10; 20; 30; 40", "[10, 20, 30, 40]", "(10 20,30;40)"])
def test_parse_box_accepts_the_separators_of_every_front_door(text):
    assert parse_box(text, "Box") == [10.0, 20.0, 30.0, 40.0]


@pytest.mark.parametrize(
    "text, tail",
    [
        ("1,2,3", "but got '1,2,3'."),
        ("a,b,c,d", "but got 'a,b,c,d'."),
        ("1,2,3,nan", "but got '1,2,3,nan'."),
        ("1,-2,3,4", "coordinates cannot be negative."),
    ],
)
def test_parse_box_errors_name_the_field(text, tail):
    with pytest.raises(ValueError) as err:
        parse_box(text, "Box", "1, 2, 3, 4")
    assert str(err.value).startswith("Box: expected four numbers x, y, w, h in pixels (e.g. 1, 2, 3, 4)")
    assert str(err.value).endswith(tail)


def test_cli_and_widget_share_the_parser_and_the_widget_needs_no_cli_module():
    from mmjudge.commands.score import parse_box as cli_parse_box

    assert cli_parse_box("1 2 3 4") == [1.0, 2.0, 3.0, 4.0]  # the CLI used to refuse spaces
    with pytest.raises(ValueError, match=r"^--box: expected four numbers .*\(e\.g\. --box 10,20,100,50\)"):
        cli_parse_box("1,2,3")
    code = "import sys, mmjudge.adapters.gradio_widget; print('mmjudge.commands.score' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_load_image_reads_arrays_payload_objects_and_keeps_a_mode(tmp_path):
    rgba = np.zeros((6, 8, 4), dtype=np.uint8)
    rgba[1:3, 2:5] = (255, 0, 0, 200)
    Image.fromarray(rgba).save(tmp_path / "layer.png")

    class FileData:  # what Gradio hands over for a file: an object with a `path`
        path = str(tmp_path / "layer.png")

    assert load_image(FileData(), mode="RGBA").getpixel((2, 1)) == (255, 0, 0, 200)
    assert load_image(FileData()).mode == "RGB"
    assert load_image(rgba, mode=None).mode == "RGBA" and load_image(rgba).getpixel((2, 1)) == (255, 0, 0)


def test_unreadable_file_is_an_image_read_error(tmp_path):
    (tmp_path / "notes.png").write_text("not an image")
    with pytest.raises(ImageReadError, match=r"^layer: cannot read image \(UnidentifiedImageError"):
        load_image(str(tmp_path / "notes.png"), where="layer")
    assert issubclass(ImageReadError, ValueError)  # callers that catch ValueError still do


def test_the_size_is_checked_from_the_header_and_formats_can_be_restricted(tmp_path):
    """Too large: ``ImageTooLargeError`` with the size, so front doors can say it their way; ``formats``
    keeps PIL from opening anything else (an icon is opened by decoding the PNG inside it)."""
    Image.new("1", (300, 200)).save(tmp_path / "wide.png")
    with pytest.raises(ImageTooLargeError, match=r"^im: image is too large \(300x200 = 60000 pixels > 59999\)") as err:
        load_image(tmp_path / "wide.png", "im", max_pixels=59_999)
    assert (err.value.size, err.value.pixels) == ((300, 200), 60_000)
    Image.new("RGBA", (32, 32)).save(tmp_path / "icon.ico")
    assert load_image(tmp_path / "icon.ico").size == (32, 32)  # the engine still reads any format by default
    with pytest.raises(ImageReadError, match=r"^icon: cannot read image \(UnidentifiedImageError"):
        load_image(tmp_path / "icon.ico", "icon", formats=HEADER_FORMATS)
    assert load_image(tmp_path / "wide.png", formats=HEADER_FORMATS).size == (300, 200)


def test_pils_bomb_warning_is_left_to_the_warnings_filters(monkeypatch):
    """``load_image`` never swaps the process-wide warnings filters (threads decode at once); PIL's
    warning, raised as an error where someone's filter says so, is still the same one-line refusal."""
    blob = io.BytesIO()
    Image.new("1", (400, 300)).save(blob, "PNG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100_000)  # 120,000 pixels: PIL warns, below twice it
    touched = []
    for name in ("catch_warnings", "simplefilter", "filterwarnings"):
        real = getattr(warnings, name)
        monkeypatch.setattr(warnings, name, lambda *a, _n=name, _r=real, **k: touched.append(_n) or _r(*a, **k))
    with pytest.warns(Image.DecompressionBombWarning):  # a larger max_pixels is honoured, PIL's warning shown
        assert load_image(blob.getvalue(), max_pixels=200_000).size == (400, 300)
    assert touched.count("catch_warnings") == 0  # (pytest.warns itself set the filters it records with)
    monkeypatch.undo()
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with pytest.raises(ImageTooLargeError, match=r"^im: image is too large \(possible decompression bomb\)\.$"):
            load_image(blob.getvalue(), "im", max_pixels=200_000)


def test_aspect_ratio_limit_is_opt_in():
    strip = Image.new("RGB", (300, 1), "gray")
    assert load_images([strip])[0].size == (300, 1)
    with pytest.raises(ValueError, match=r"images\[0\]: aspect ratio 300x1 is more extreme than 200:1"):
        load_images([strip], max_aspect_ratio=MAX_ASPECT_RATIO)


def test_clip_score_reads_a_300x1_strip(clip_dir):
    """A 300x1 strip is scored (no aspect-ratio refusal for CLIP), with the number transformers' own CLIP
    preprocessing gives: a uniform strip is uniform at any interpolation. (Random weights: the cosine is
    positive for this pair, so the score is not the clamp at 0.)"""
    import torch
    from transformers import CLIPModel, CLIPProcessor

    from mmjudge.metrics.clip_score import CLIPScore

    strip = Image.new("RGB", (300, 1), "red")
    out = CLIPScore(model=clip_dir).compute(predictions=["a line"], images=[strip], progress=False)
    model, processor = CLIPModel.from_pretrained(clip_dir).eval(), CLIPProcessor.from_pretrained(clip_dir)
    inputs = processor(text=["A photo depicts a line"], images=[strip], return_tensors="pt", padding=True)
    with torch.no_grad():
        image = model.get_image_features(pixel_values=inputs["pixel_values"]).pooler_output
        text = model.get_text_features(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    cosine = torch.nn.functional.cosine_similarity(image, text.pooler_output).item()
    assert cosine > 0 and out["clip_score"] == pytest.approx([2.5 * cosine], abs=1e-5)
