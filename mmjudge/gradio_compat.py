"""What every mmjudge page (the Space, the leaderboard) adds to Gradio 6 that Gradio itself lacks.

Gradio 6.31's status tracker announces a finished event to screen readers as ``t("common.complete")``,
a key its own English strings do not hold, so the page's live region read "common.complete" after every
event. :func:`launch_options` supplies the string (Gradio falls back to English for other languages).

>>> sorted(MISSING_TRANSLATIONS)
['common.complete']
"""

from __future__ import annotations

from typing import Any

MISSING_TRANSLATIONS = {"common.complete": "Done."}


def launch_options() -> dict[str, Any]:
    """Keyword arguments for ``Blocks.launch`` every page passes (Gradio imported here, on use)."""
    import gradio as gr

    return {"i18n": gr.I18n(en=dict(MISSING_TRANSLATIONS))}
