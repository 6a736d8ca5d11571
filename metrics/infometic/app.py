"""The Space of the `infometic` evaluate module: a Gradio 6 widget built from the metric's declared inputs.

Metric options (judge model, cache …) come from the MMJUDGE_WIDGET_OPTIONS environment variable (JSON).
"""

from mmjudge.adapters.gradio_widget import launch_widget, load_module

if __name__ == "__main__":  # Spaces run `python app.py`; importing it (doctest collection) launches nothing
    launch_widget(load_module(__file__))
