"""Every image the Space receives is bounded before any of it is decoded: Gradio hands the events the raw
upload (``preprocess=False``, so none of its ``image_mode`` conversions, EXIF transposes or editor
flattenings run), and the Space opens the file only as a PNG, JPEG, WebP, GIF or BMP and checks its size from
the header (:func:`mmjudge.images.load_image` with ``formats=HEADER_FORMATS``).

"No decode" is proved with a spy on PIL's ``ImageFile.load`` (every format read here decodes through it, on
any thread), never with tracemalloc: PIL's pixel memory is allocated in C, where tracemalloc does not look.
A 13,000 x 13,000 RGBA PNG of one colour is a 0.7 MB file that would decode to 676 MB (then 507 MB of RGB).
"""

from __future__ import annotations

import socket
import warnings

import pytest
from PIL import Image

from large_images import icon_bytes, png_bytes
from mmjudge.images import draw_box, image_digest, load_image
from mmjudge.space import Settings
from mmjudge.space.handlers import Scorer, score_page
from mmjudge.space.inputs import build_item
from mmjudge.testing import ScriptedJudge

SCRIPT = {c: [0, 0, 0.5, 0.5, 0] for c in ("correctness", "completeness", "clarity", "fluency", "conciseness")}
HUGE = (13_000, 13_000)  # 169 M pixels: above PIL's warning (89 M), below its refusal (179 M)
TOO_LARGE = (
    "**Error:** Image: the image is 13,000 × 13,000 pixels (169.0 megapixels); this Space accepts images up to "
    "40 megapixels. Resize it, e.g. to 6,324 × 6,324, and upload it again."
)
UNREADABLE = "**Error:** Image: the file is not an image that can be read (PNG, JPEG, WebP, GIF or BMP)."


@pytest.fixture(scope="module")
def huge_png(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("huge") / "huge.png"
    path.write_bytes(png_bytes(HUGE))
    assert path.stat().st_size < 1_000_000
    return str(path)


@pytest.fixture
def icon(tmp_path) -> str:
    """An icon whose directory claims 16 x 16 and whose one entry is a 5000 x 5000 PNG."""
    path = tmp_path / "favicon.ico"
    path.write_bytes(icon_bytes((5000, 5000)))
    return str(path)


@pytest.fixture
def photos(tmp_path) -> dict[str, str]:
    """A PNG with transparency and a JPEG whose EXIF says "rotate 90° clockwise to show" (orientation 6)."""
    rgba = Image.new("RGBA", (64, 48), (135, 206, 235, 255))
    rgba.paste((139, 69, 19, 128), (20, 20, 40, 40))
    rgba.paste((0, 0, 0, 0), (0, 0, 8, 8))
    rgba.save(tmp_path / "alpha.png")
    jpeg = Image.new("RGB", (80, 40), (200, 30, 30))
    jpeg.paste((20, 20, 220), (0, 0, 20, 40))
    exif = Image.Exif()
    exif[274] = 6
    jpeg.save(tmp_path / "rotated.jpg", exif=exif.tobytes(), quality=95)
    return {"png": str(tmp_path / "alpha.png"), "jpeg": str(tmp_path / "rotated.jpg")}


def scorer() -> Scorer:
    return Scorer(Settings(judge="scripted"), judge=ScriptedJudge(SCRIPT))


# ------------------------------------------------------------------------------------------ handler
def test_a_huge_rgba_png_is_refused_from_its_header(huge_png, decoded):
    with pytest.warns(Image.DecompressionBombWarning):  # PIL's own, from the header; it stops nothing
        page = score_page(scorer(), "ic", {"path": huge_png}, "a dog", metrics=["HarmonicEval"])
    assert page.status == TOO_LARGE and not page.ok
    editor = {"background": {"path": huge_png}, "layers": [], "composite": None}
    with pytest.warns(Image.DecompressionBombWarning):
        page = score_page(scorer(), "reg", None, "the dog", editor=editor, box_text="1, 1, 5, 5")
    assert page.status == TOO_LARGE
    assert decoded == []


def test_a_drawn_layer_past_pils_own_ceiling_is_refused_by_its_pixel_count(tmp_path, decoded):
    """400 M pixels: PIL refuses to open it at all, and the line says the count PIL read."""
    layer = tmp_path / "layer.png"
    layer.write_bytes(png_bytes((20_000, 20_000)))
    background = tmp_path / "bg.png"
    Image.new("RGB", (64, 48)).save(background)
    editor = {"background": {"path": str(background)}, "layers": [{"path": str(layer)}], "composite": None}
    page = score_page(scorer(), "reg", None, "the dog", editor=editor)
    assert page.status == (
        "**Error:** Box: drawn layer 1: the image has 400 megapixels; this Space accepts images up to 40 "
        "megapixels. Resize it and upload it again."
    )
    assert decoded == [(64, 48)]  # the background alone


def test_an_icon_hiding_a_large_png_is_refused_unopened(icon, photos, decoded):
    with pytest.warns(UserWarning, match="not the expected size"):  # what opening it would do
        assert Image.open(icon).size == (5000, 5000)
    assert decoded == [(5000, 5000)]  # opened, not loaded: decoded all the same
    decoded.clear()
    page = score_page(scorer(), "ic", {"path": icon}, "a dog", metrics=["HarmonicEval"])
    assert page.status.startswith(UNREADABLE) and "\n" not in page.status
    editor = {"background": {"path": photos["png"]}, "layers": [{"path": icon}], "composite": None}
    page = score_page(scorer(), "reg", None, "the dog", editor=editor)
    assert page.status.startswith("**Error:** Box: drawn layer 1: the file is not an image that can be read (PNG")
    assert page.status.endswith("Or type the box as x, y, w, h.")
    assert decoded == [(64, 48)]  # the background alone


def test_normal_uploads_are_read_as_before(photos, decoded):
    """What the judge sees is what ``mmjudge score`` reads from the same file (alpha dropped; the JPEG's
    pixels as stored, its EXIF orientation not applied: 80 x 40, not 40 x 80), as on main before this change
    (digests of main's output, Pillow 12.3)."""
    for kind, path in photos.items():
        item = build_item("ic", {"path": path}, "a picture")
        assert image_digest(item["image"]) == image_digest(load_image(path))
        page = score_page(
            scorer(), "reg", {"path": path}, "the thing", box_text="2, 2, 10, 10", metrics=["HarmonicEval"]
        )
        assert page.status == "Scored with HarmonicEval.", page.status
        assert image_digest(page.boxed_image) == image_digest(draw_box(load_image(path), [2, 2, 10, 10]))
        if kind == "jpeg":
            assert item["image"].size == (80, 40)
    png = build_item("ic", {"path": photos["png"]}, "a picture")["image"]
    assert (png.mode, png.getpixel((0, 0)), png.getpixel((30, 30))) == ("RGB", (0, 0, 0), (139, 69, 19))
    assert image_digest(png)[:12] == "c321dc6622c2"


def test_the_check_leaves_the_warnings_filters_alone(huge_png, photos, monkeypatch):
    """``warnings.catch_warnings`` swaps the process-wide filter list: two requests on two threads would
    change each other's filters. Neither the check nor the decode touches them."""
    touched = []
    for name in ("catch_warnings", "simplefilter", "filterwarnings", "resetwarnings"):
        real = getattr(warnings, name)
        monkeypatch.setattr(warnings, name, lambda *a, _n=name, _r=real, **k: touched.append(_n) or _r(*a, **k))
    before = list(warnings.filters)
    with pytest.raises(ValueError, match="169.0 megapixels"):
        build_item("ic", {"path": huge_png}, "a dog")
    build_item("ic", {"path": photos["png"]}, "a dog")
    monkeypatch.undo()
    assert touched == [] and warnings.filters == before


# ------------------------------------------------------------------------------------ served page
def test_every_event_that_takes_an_image_takes_the_raw_upload():
    """Gradio's own preprocessing would decode an upload before the Space's check: ``gr.Image`` converts
    any non-RGB file to ``image_mode`` and transposes by EXIF, ``gr.ImageEditor`` decodes and flattens the
    background and every layer, bounded only by PIL's process-wide limit. No event may turn it on."""
    gr = pytest.importorskip("gradio")
    from mmjudge.space.app import build_demo

    demo = build_demo(Settings(judge="scripted"), scorer())
    taking = {
        fn.api_name: fn.preprocess
        for fn in demo.fns.values()
        if any(isinstance(c, (gr.Image, gr.ImageEditor)) for c in fn.inputs)
    }
    assert taking == {"score": False, "compare": False, "on_image": False}


@pytest.fixture(scope="module")
def served():
    pytest.importorskip("gradio")
    from mmjudge.space.app import build_demo

    demo = build_demo(Settings(judge="scripted"), scorer())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    yield url
    demo.close()


def test_the_served_page_refuses_a_huge_upload_before_gradio_or_pil_decodes_it(served, huge_png, icon, decoded):
    from gradio_client import Client, handle_file

    client = Client(served, verbose=False)
    args = ("", "", "", ["HarmonicEval"], False)
    assert client.predict("ic", handle_file(huge_png), None, "a dog", *args, api_name="/score")[0] == TOO_LARGE
    editor = {"background": handle_file(huge_png), "layers": [], "composite": handle_file(huge_png)}
    assert client.predict("reg", None, editor, "the dog", *args, api_name="/score")[0] == TOO_LARGE
    compared = client.predict("ic", handle_file(huge_png), "A dog.", "A cat.", "", "", False, api_name="/compare")
    assert compared[0] == TOO_LARGE
    status = client.predict("ic", handle_file(icon), None, "a dog", *args, api_name="/score")[0]
    assert status.startswith(UNREADABLE)
    opened = client.predict(handle_file(huge_png), api_name="/on_image")  # the editor starts from the file
    assert opened["background"].endswith("huge.png") and opened["layers"] == []
    assert decoded == []


def test_the_served_page_scores_normal_uploads_as_before(served, photos, decoded):
    from gradio_client import Client, handle_file

    client = Client(served, verbose=False)
    for path in photos.values():
        out = client.predict(
            "reg",
            handle_file(path),
            None,
            "the thing",
            "",
            "2, 2, 10, 10",
            "",
            ["HarmonicEval"],
            False,
            api_name="/score",
        )
        assert out[0] == "Scored with HarmonicEval.", out[0]
        with Image.open(out[4]["value"]) as shown:  # the boxed picture, as Gradio sends it (WebP)
            assert shown.size == load_image(path).size  # the boxed picture as the judge saw it, not turned
    assert decoded and max(w * h for w, h in decoded) <= 80 * 40
