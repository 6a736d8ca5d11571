"""The Space's "Compare two texts" tab: exact per-criterion preferences from a scripted judge, one-line
errors, escaped judge text, and the ``/compare`` endpoint of the served page."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from mmjudge.space import Settings
from mmjudge.space.compare_tab import compare_page
from mmjudge.space.handlers import Scorer
from mmjudge.testing import ScriptedJudge

SLOTS = re.compile(r"(?:Text|Caption|Answer|Expression) A: (.*)\n(?:Text|Caption|Answer|Expression) B: (.*)\n")


def brown_judge(explanation: str = "scripted explanation") -> ScriptedJudge:
    """Prefers the text that says "brown": 0.7 for it, 0.2 for the other, 0.1 tie, whichever slot it is in."""

    def answer(request):
        first, _ = SLOTS.search(request.turns[0].text).groups()
        return [0.7, 0.2, 0.1] if "brown" in first else [0.2, 0.7, 0.1]

    return ScriptedJudge(answer, explanation=explanation)


@pytest.fixture
def picture(tmp_path) -> str:
    path = tmp_path / "scene.png"
    Image.new("RGB", (64, 48), (139, 69, 19)).save(path)
    return str(path)


def scorer(explanation: str = "scripted explanation") -> Scorer:
    return Scorer(Settings(judge="scripted"), judge=brown_judge(explanation))


def test_the_tab_shows_each_criterion_preference_exactly(picture):
    page = compare_page(scorer(), "ic", picture, "A brown square.", "A square.")
    # P(A better) = ½ (0.7 + 0.7) + ½ · 0.1 = 0.75 on every criterion; no slot bias.
    assert page.status == "Text A is better: P(A better) = 0.750, both orders judged, every criterion."
    assert "| correctness | 0.750 | **A** | 0.100 | +0.000 |" in page.table
    assert "| overall | 0.750 | **A** |" in page.table
    assert json.loads(page.share_json)["fluency"] == pytest.approx(0.75)
    assert "config=pairwise" in page.signature
    swapped = compare_page(scorer(), "ic", picture, "A square.", "A brown square.")
    assert "| fluency | 0.250 | **B** |" in swapped.table


def test_explanations_are_escaped_and_mistakes_are_one_line(picture):
    page = compare_page(
        scorer("<img src=x onerror=alert(1)> [click](https://evil.example)"),
        "ic",
        picture,
        "A brown square.",
        "A square.",
        explain=True,
    )
    assert "<img" not in page.explanations and "&lt;img" in page.explanations
    assert "https\\://evil" in page.explanations
    assert compare_page(scorer(), "ic", None, "a", "b").status.startswith("**Error:** Image: missing")
    assert compare_page(scorer(), "vqa", picture, "a", "b").status.startswith("**Error:** Question")
    assert compare_page(scorer(), "ic", picture, " ", "b").status == (
        "**Error:** Text A: empty. Type the first caption to compare."
    )


def test_the_served_page_answers_compare(picture):
    pytest.importorskip("gradio")
    from gradio_client import Client, handle_file

    from mmjudge.space.app import build_demo

    s = scorer()
    demo = build_demo(s.settings, s)
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    try:
        client = Client(url, verbose=False)
        status, table, _, signature, _ = client.predict(
            "ic", handle_file(picture), "A brown square.", "A square.", "", "", False, api_name="/compare"
        )
        assert status.startswith("Text A is better") and "| clarity | 0.750 | **A** |" in table
        assert "config=pairwise" in signature
    finally:
        demo.close()
