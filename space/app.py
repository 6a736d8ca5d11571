"""Hugging Face Space entry point: the page is built by the engine (mmjudge.space.app); settings come
from the Space's variables (MMJUDGE_SPACE_MODEL, MMJUDGE_SPACE_DEMO, ...; see space/README.md)."""

from mmjudge.gradio_compat import launch_options
from mmjudge.space.app import build_demo

demo = build_demo()

if __name__ == "__main__":
    demo.launch(**launch_options())
