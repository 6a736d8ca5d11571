"""The checks of evaluate's own common module test, over every folder in ``metrics/``.

Every module in the ``evaluate`` repository passes ``tests/test_metric_common.py``
(``LocalModuleTest.test_load``): it is loaded through ``evaluate.loading.evaluation_module_factory``, the
class ``evaluate.loading.import_main_class`` finds has a ``_compute`` without ``**kwargs``, and
``doctest.testmod(module, raise_on_error=True)`` runs more than one example with none failing. CI cannot
fetch that repository, so the same three checks are written here (ours, not a copy), over every folder in
``metrics/``: a metric added later is checked without being listed. One more check is ours: a shell's
``_compute`` names exactly its engine metric's ``compute`` keywords, so the two cannot drift apart.
"""

import doctest
import importlib
import inspect
import os
from unittest.mock import patch

import pytest

from repo_paths import ROOT

evaluate = pytest.importorskip("evaluate")

MODULES = sorted(p.name for p in (ROOT / "metrics").iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


@pytest.fixture
def module_cache(monkeypatch):
    """The checkout as the working folder: modules are loaded from ``metrics/<name>`` as evaluate's test
    loads them. evaluate's caches stay the session's (CI gives every run a private ``HF_HOME``): the package
    ``evaluate_modules`` is imported once per process, from the first modules cache, so a cache of this
    test's own would not be found by a process that loaded any module before."""
    monkeypatch.chdir(ROOT)


def _load_module(name: str):
    """The module as evaluate's test gets it: through the module factory, then its main class."""
    factory = evaluate.loading.evaluation_module_factory(os.path.join("metrics", name), module_type="metric")
    module = importlib.import_module(factory.module_path)
    return module, evaluate.loading.import_main_class(module.__name__)


def test_every_folder_is_a_module():
    assert {"baselines", "clip_score", "fleur", "harmonic_eval", "vela"} <= set(MODULES)
    for name in MODULES:
        assert (ROOT / "metrics" / name / f"{name}.py").is_file(), f"metrics/{name}/ has no {name}.py"
        assert (ROOT / "metrics" / name / "README.md").is_file(), f"metrics/{name}/ has no metric card"


@pytest.mark.parametrize("name", MODULES)
def test_compute_names_its_inputs(name, module_cache):
    _, main = _load_module(name)
    assert main is not None, f"metrics/{name}: evaluate finds no metric class"
    parameters = inspect.signature(main._compute).parameters
    assert all(p.kind != p.VAR_KEYWORD for p in parameters.values()), f"metrics/{name}: _compute takes **kwargs"
    engine = getattr(main, "ENGINE", None)
    if not engine:
        return
    from mmjudge.metrics import METRICS

    # The union of the engine's compute keywords over its configurations. The shell may give a default to
    # an input its engine requires (the engine says what is missing; HarmonicEval's options decide whether
    # images are needed), never require one that some configuration does without.
    engine_cls = METRICS.get(engine)
    signatures = [engine_cls.spec_for(c).compute_signature().parameters for c in engine_cls.configs]
    keywords = {n for params in signatures for n in params}
    always = {n for n in keywords if all(n in ps and ps[n].default is inspect.Parameter.empty for ps in signatures)}
    shell = {n: p for n, p in parameters.items() if n != "self"}
    assert set(shell) == keywords, f"metrics/{name}: _compute takes {sorted(shell)}, {engine} takes {sorted(keywords)}"
    required = {n for n, p in shell.items() if p.default is inspect.Parameter.empty}
    assert required <= always, f"metrics/{name}: _compute requires {sorted(required - always)}"
    assert "predictions" in required


@pytest.mark.slow  # builds tiny random-weight CLIP and LLM models for the clip_score and vela examples
@pytest.mark.parametrize("name", MODULES)
def test_doctests_run_more_than_one_example(name, module_cache, monkeypatch):
    module, _ = _load_module(name)
    load = evaluate.load

    def load_local(module_name, *args, **kwargs):  # the examples' evaluate.load("<name>") reads the checkout
        return load(os.path.join("metrics", module_name), *args, **kwargs)

    monkeypatch.setattr(doctest, "ELLIPSIS_MARKER", "[...]")
    with patch("evaluate.load", side_effect=load_local):
        try:
            results = doctest.testmod(module, raise_on_error=True)
        except doctest.UnexpectedException as err:
            raise err.exc_info[1] from None  # the exception the example raised, not doctest's wrapper
    assert results.failed == 0
    assert results.attempted > 1
