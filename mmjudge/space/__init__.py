"""The Gradio Space's engine: settings, input checks, scoring and result formatting, and the page.

``space/app.py`` (the Hugging Face Space entry point) and ``mmjudge space`` are thin shells over
:func:`mmjudge.space.app.build_demo`. Gradio is imported only when the page is built, so this package
imports without it.
"""

from __future__ import annotations

from mmjudge.space.settings import Settings

__all__ = ["Settings"]
