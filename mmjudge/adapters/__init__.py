"""Adapters from the engine to the libraries users meet it through: ``evaluate`` modules
(:mod:`~mmjudge.adapters.evaluate_metric`, and :mod:`~mmjudge.adapters.evaluate_registry`, which lets
``evaluate.load("<name>")`` find them offline) and the Gradio widget of a module's Space
(:mod:`~mmjudge.adapters.gradio_widget`). No logic of scoring lives here: each adapter reads the metric's
declaration and calls the engine.
"""
