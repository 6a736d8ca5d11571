"""Hugging Face Space entry point: the page is built by the engine (mmjudge.space.app); settings come
from the Space's variables (MMJUDGE_SPACE_MODEL, MMJUDGE_SPACE_DEMO, ...; see space/README.md)."""

from mmjudge.space.app import build_demo, serve
from mmjudge.space.settings import Settings

settings = Settings.from_env()
demo = build_demo(settings)

if __name__ == "__main__":
    serve(demo, settings, host="0.0.0.0", port=7860)
