"""`mmjudge serve --max-image-pixels`: a request's image is refused from its header, before any pixel is
decoded, when it has more pixels than the server allows; one just under the limit is decoded and rated
as the local backend rates it.

"Before decoding" is proved with a spy on PIL's ``ImageFile.load`` (every format read here decodes through
it), never with wall time: PIL's pixel memory is allocated in C, where tracemalloc does not see it. PNGs
of one colour compress to kilobytes, so a 20,000 x 20,000 image is a 48 kB request. A tiny random-weight
LLaVA (32 x 32 pixel vision tower) proves the plumbing, never judging quality.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import struct

import numpy as np
import pytest

pytest.importorskip("uvicorn")

from PIL import Image

from large_images import icon_bytes, png_bytes
from mmjudge.judges import load_judge
from mmjudge.judges.openai.judge import OpenAIJudge
from mmjudge.judges.requests import RatingRequest, Turn
from mmjudge.serve.image_input import decode_image
from mmjudge.serve.server import serve_in_thread

LIMIT = 16_000_000
WHERE = "messages[0].content[0]"
HANG = 120  # seconds: a socket timeout only a hang reaches


@pytest.fixture(scope="module")
def vlm(tiny_llava_dir):
    return load_judge("transformers", model=tiny_llava_dir, device="cpu")


@pytest.fixture(scope="module")
def served(vlm):
    server, url = serve_in_thread(vlm, max_logprobs=100_000, max_image_pixels=LIMIT)
    yield server, url
    server.shutdown()


def _url(blob: bytes, kind: str) -> str:
    return f"data:image/{kind};base64," + base64.b64encode(blob).decode()


def _body(blob: bytes, kind: str = "png") -> dict:
    parts = [{"type": "image_url", "image_url": {"url": _url(blob, kind)}}, {"type": "text", "text": "Rate it."}]
    return {"messages": [{"role": "user", "content": parts}], "max_tokens": 1}


def _post(url: str, body: dict, path: str = "/v1/chat/completions") -> tuple[int, bytes]:
    port = int(url.split("//")[1].split("/")[0].split(":")[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    data = reply.read()
    conn.close()
    return reply.status, data


def _refusal(url: str, body: dict) -> str:
    """The message of a 400 whose body is OpenAI's error object on one line, naming ``messages``."""
    status, data = _post(url, body)
    assert status == 400 and b"\n" not in data.strip(), data[:300]
    error = json.loads(data)["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", "messages")
    return error["message"]


def test_an_image_over_the_limit_is_refused_from_its_header_before_any_pixel_is_decoded(served, decoded):
    message = _refusal(served[1], _body(png_bytes((4001, 4001), rgba=False)))
    assert message == (
        f"the image in {WHERE} is 4001x4001 = 16008001 pixels, above this server's limit of 16000000 "
        "(mmjudge serve --max-image-pixels)."
    )
    huge = png_bytes((20_000, 20_000), rgba=False)  # 400 megapixels in 49 kB (past PIL's own ceiling too)
    assert len(huge) < 100_000
    assert _refusal(served[1], _body(huge)) == (
        f"the image in {WHERE} holds 400000000 pixels, above this server's limit of 16000000 "
        "(mmjudge serve --max-image-pixels)."
    )
    assert decoded == []  # neither image was decoded
    assert decode_image(_url(png_bytes((300, 200), rgba=False), "png"), WHERE, LIMIT).size == (300, 200)  # a real PNG
    with pytest.raises(ValueError, match=r"is too large for PIL to open \(Image size \(400000000 pixels\) exceeds"):
        decode_image(_url(huge, "png"), WHERE, 10**9)  # PIL's own ceiling, above a larger --max-image-pixels


def test_the_limit_is_the_decoded_frames_size(served, decoded):
    """A GIF whose first frame is larger than its logical screen: PIL decodes the frame at its own size, and
    that is the size checked (the screen the header states is 100 x 100)."""
    blob = io.BytesIO()
    Image.new("P", (4001, 4001)).save(blob, "GIF")
    gif = bytearray(blob.getvalue())
    gif[6:10] = struct.pack("<HH", 100, 100)
    message = _refusal(served[1], _body(bytes(gif), "gif"))
    assert message.startswith(f"the image in {WHERE} is 4001x4001 = 16008001 pixels, above")
    assert decoded == []


def test_formats_that_decode_while_opening_are_refused_unopened(served, decoded):
    """An icon claiming 16 x 16 that holds a 5000 x 5000 PNG: PIL's ICO plugin decodes that PNG inside
    ``Image.open`` (before any size check could run), so ICO is not read at all."""
    ico = icon_bytes((5000, 5000))
    with pytest.warns(UserWarning, match="not the expected size"):  # what reading it does
        assert Image.open(io.BytesIO(ico)).size == (5000, 5000)
    assert decoded == [(5000, 5000)]  # opened, not loaded: decoded all the same
    decoded.clear()
    message = _refusal(served[1], _body(ico, "x-icon"))
    assert message == f"the image in {WHERE} is not a PNG, JPEG, WebP, GIF or BMP image (cannot identify image file)."
    assert decoded == []


def test_an_image_just_under_the_limit_is_decoded_and_rated_as_the_local_backend_rates_it(vlm, served, decoded):
    image = Image.new("RGB", (4000, 4000), (180, 40, 20))  # exactly the limit: 16,000,000 pixels
    image.paste((10, 200, 30), (0, 0, 2000, 2000))
    request = RatingRequest([Turn("user", "Rate the picture.")], image=image, answer_prefix="Score: ")
    api = OpenAIJudge(base_url=served[1], prefill="continue", mass="top-k", top_logprobs=len(vlm.tokenizer))
    remote = api.rate([request], progress=False)
    assert (4000, 4000) in decoded and api.usage.requests == 1
    local = vlm.rate([request], progress=False)
    np.testing.assert_allclose([r.raw for r in remote], [r.raw for r in local], atol=1e-5)
    assert [r.greedy for r in remote] == [r.greedy for r in local]


def test_server_info_states_the_limit(served):
    port = int(served[1].split("//")[1].split("/")[0].split(":")[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=HANG)
    conn.request("GET", "/server_info")
    info = json.loads(conn.getresponse().read())
    conn.close()
    assert info["max_image_pixels"] == LIMIT


def test_help_states_the_default_and_settings_refuse_what_is_not_a_count(capsys):
    from mmjudge.cli import build_parser
    from mmjudge.serve.settings import ServeSettings

    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-image-pixels MAX_IMAGE_PIXELS most pixels (width x height) a request's image may have" in text
    assert "before any pixel is decoded (default 36000000: 6000x6000)" in text
    assert ServeSettings().max_image_pixels == 36_000_000
    for value in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match=f"^Expected max_image_pixels to be a positive integer, but got {value}"):
            ServeSettings(max_image_pixels=value)
