"""The metrics' Gradio widget bounds every uploaded image before any of it is decoded: its scoring event runs
with ``preprocess=False`` (so Gradio neither opens the file with every PIL plugin nor converts its mode), and
the widget opens the file only as a PNG, JPEG, WebP, GIF or BMP, its size checked from the header against the
Space's limit (:func:`mmjudge.adapters.gradio_widget.read_upload`). A normal upload scores as on main.

"No decode" is proved with a spy on PIL's ``ImageFile.load`` (every format read here decodes through it, on
any thread), as tests/space/test_space_image_bounds.py does. A 13,000 x 13,000 RGBA PNG of one colour is a
0.7 MB file that would decode to 676 MB.
"""

from __future__ import annotations

import socket

import pytest
from PIL import Image

from large_images import icon_bytes, png_bytes
from repo_paths import ROOT

gr = pytest.importorskip("gradio")
evaluate = pytest.importorskip("evaluate")

pytestmark = pytest.mark.usefixtures("offline")  # conftest.py: offline, private caches

HUGE = (13_000, 13_000)  # 169 M pixels: above PIL's warning (89 M), below its refusal (179 M)
TOO_LARGE = (
    "images: the image is 13,000 × 13,000 pixels (169.0 megapixels); this widget accepts images up to "
    "40 megapixels. Resize it and upload it again."
)
UNREADABLE = (
    "images: the file is not an image that can be read (PNG, JPEG, WebP, GIF or BMP); upload a real image file."
)
TEXT = "A brown square on blue."
# The row's `overall` main's widget (75adb5e: gr.Image(type="pil"), Gradio decoding) gave for these files
# with the dummy judge, served and asked through gradio_client; its score hashes the pixels the judge sees.
MAIN_OVERALL = {"rgb.png": 2.633329164680332, "rgba.png": 2.8124498723814204, "rotated.jpg": 2.6803849518374445}


@pytest.fixture(scope="module")
def huge_png(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("huge") / "huge.png"
    path.write_bytes(png_bytes(HUGE))
    assert path.stat().st_size < 1_000_000
    return str(path)


@pytest.fixture(scope="module")
def icon(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("icon") / "favicon.ico"
    path.write_bytes(icon_bytes((5000, 5000)))
    return str(path)


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> dict[str, str]:
    """An RGB PNG, a PNG with transparency, and a JPEG whose EXIF says "rotate 90° clockwise to show"."""
    folder = tmp_path_factory.mktemp("photos")
    rgb = Image.new("RGB", (64, 48), (135, 206, 235))
    rgb.paste((139, 69, 19), (20, 20, 40, 40))
    rgb.save(folder / "rgb.png")
    rgba = Image.new("RGBA", (64, 48), (135, 206, 235, 255))
    rgba.paste((139, 69, 19, 128), (20, 20, 40, 40))
    rgba.paste((0, 0, 0, 0), (0, 0, 8, 8))
    rgba.save(folder / "rgba.png")
    exif = Image.Exif()
    exif[274] = 6
    jpeg = Image.new("RGB", (80, 40), (200, 30, 30))
    jpeg.paste((20, 20, 220), (0, 0, 20, 40))
    jpeg.save(folder / "rotated.jpg", exif=exif.tobytes(), quality=95)
    return {name: str(folder / name) for name in MAIN_OVERALL}


@pytest.fixture
def demo():
    from mmjudge.adapters.gradio_widget import build_widget

    return build_widget(evaluate.load(str(ROOT / "metrics" / "harmonic_eval"), judge="dummy", cache=False))


def refusal(demo, image) -> str:
    with pytest.raises(gr.Error) as err:
        demo.fn(TEXT, image, "", "", "ic")
    return err.value.message


# ------------------------------------------------------------------------------------------ the function
def test_gradios_own_preprocessing_would_decode_an_icon_even_as_a_filepath(icon, decoded):
    """Why the event turns preprocessing off: ``type="filepath"`` still opens the file with every PIL plugin,
    and the ICO plugin decodes the icon's PNG inside ``Image.open``."""
    from gradio.data_classes import ImageData

    with pytest.warns(UserWarning, match="not the expected size"):
        gr.Image(type="filepath", image_mode=None).preprocess(ImageData(path=icon, orig_name="favicon.ico"))
    assert decoded == [(5000, 5000)]


def test_the_scoring_event_takes_the_raw_upload(demo):
    taking = [fn.preprocess for fn in demo.fns.values() if any(isinstance(c, gr.Image) for c in fn.inputs)]
    assert taking == [False]


def test_a_huge_rgba_png_is_refused_from_its_header(demo, huge_png, decoded):
    with pytest.warns(Image.DecompressionBombWarning):  # PIL's own, from the header; it stops nothing
        assert refusal(demo, {"path": huge_png, "url": None, "orig_name": "huge.png"}) == TOO_LARGE
    with pytest.warns(Image.DecompressionBombWarning):
        assert refusal(demo, huge_png) == TOO_LARGE  # a plain path, as another caller may pass it
    assert decoded == []


def test_an_icon_hiding_a_large_png_is_refused_unopened(demo, icon, decoded):
    assert refusal(demo, {"path": icon}) == UNREADABLE
    assert decoded == []


def test_a_url_in_the_payload_is_not_fetched(demo, monkeypatch):
    import mmjudge.images

    monkeypatch.setattr(mmjudge.images, "fetch_url", lambda *a, **k: pytest.fail("the widget fetched a URL"))
    assert refusal(demo, {"path": "http://127.0.0.1:9/a.png"}) == (
        "images: expected an uploaded image file, but got a URL; download it and upload the file."
    )


def test_normal_uploads_score_as_on_main(demo, photos, decoded):
    """The same rows as main's widget, and as this widget given what Gradio's old preprocessing made of the
    file (RGB, alpha dropped, turned upright by EXIF): the RGBA PNG and the rotated JPEG included."""
    from gradio.data_classes import ImageData

    old = gr.Image(type="pil")  # main's component, its preprocessing on
    for name, path in photos.items():
        row = demo.fn(TEXT, {"path": path, "orig_name": name}, "", "", "ic")
        assert row["overall"] == MAIN_OVERALL[name], name
        as_before = demo.fn(TEXT, old.preprocess(ImageData(path=path, orig_name=name)), "", "", "ic")
        assert row == as_before
    assert MAIN_OVERALL["rgb.png"] != MAIN_OVERALL["rgba.png"]  # the score does see the pixels
    assert decoded and max(w * h for w, h in decoded) <= 80 * 40


# ------------------------------------------------------------------------------------------ served widget
def test_the_served_widget_refuses_before_decoding_and_scores_normal_uploads_as_on_main(
    demo, huge_png, icon, photos, decoded
):
    """In-process, launched as ``launch_widget`` launches it, asked through gradio_client."""
    from gradio_client import Client, handle_file
    from gradio_client.exceptions import AppError

    from mmjudge.adapters.gradio_widget import MAX_UPLOAD_BYTES
    from mmjudge.gradio_compat import launch_page

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _, url, _ = launch_page(
        demo, MAX_UPLOAD_BYTES, prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True
    )
    try:
        client = Client(url, verbose=False)
        for path, line in ((huge_png, TOO_LARGE), (icon, UNREADABLE)):
            with pytest.raises(AppError) as err:
                client.predict(TEXT, handle_file(path), "", "", "ic", api_name="/score")
            assert str(err.value) == line
        assert decoded == []
        for name, path in photos.items():
            row = client.predict(TEXT, handle_file(path), "", "", "ic", api_name="/score")
            assert row["overall"] == MAIN_OVERALL[name], name
        assert decoded and max(w * h for w, h in decoded) <= 80 * 40
    finally:
        demo.close()
