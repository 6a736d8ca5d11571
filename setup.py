"""mmjudge: automatic evaluation of text written by vision-language models."""

import re
import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
# One version, read from the package's leaf module (no import: setup must not need the dependencies).
VERSION = re.search(
    r'^__version__ = "([^"]+)"', (HERE / "mmjudge" / "_version.py").read_text(encoding="utf-8"), re.M
).group(1)


class BuildWithEvaluateShells(build_py):
    """Bundle the thin `metrics/<name>/<name>.py` evaluate shells inside the package for regular
    (non-editable) installs, so `evaluate.load("<name>")` can be registered from site-packages."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "mmjudge" / "_evaluate_shells"
        for script in (HERE / "metrics").glob("*/*.py"):
            (target / script.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(script, target / script.parent.name / script.name)
            readme = script.parent / "README.md"
            if readme.is_file():
                shutil.copy2(readme, target / script.parent.name / "README.md")


# torch is deliberately not pinned here: users bring the build that fits their machine (CUDA or CPU).
CORE = [
    "numpy>=1.24",
    "pillow>=10",
    "tqdm>=4.60",
    "torch>=2.2",
    "transformers>=5.0",
    "accelerate>=1.0",
    "evaluate>=0.4.3",
    "datasets>=3.0",
    "scipy>=1.10",  # Kendall tau (meta-evaluation), Pascal-50S .mat files
    'tomli>=1.1; python_version < "3.11"',  # prompt files are TOML (tomllib is stdlib from 3.11)
]

EXTRAS = {
    "qwen": ["torchvision"],  # Qwen2-VL / Qwen2.5-VL processors need torchvision
    "gguf": ["gguf>=0.10"],
    # METEOR runs the official 1.5 jar shipped by pycocoevalcap (needs Java); BERTScore's baseline
    # rescaling reads the bert-score package's files.
    "baselines": ["pycocoevalcap>=1.2", "bert-score>=0.3.13"],
    "metaeval": ["matplotlib>=3.7"],
    # CAPTURE's sentence splitting, tagging and WordNet (its data: metrics/capture/README.md).
    "capture": ["nltk>=3.9"],
    "space": ["gradio>=6.0", "pandas>=2.0"],
    "leaderboard": ["gradio>=6.0", "pandas>=2.0", "huggingface-hub>=0.30"],
    "vela": ["peft>=0.13", "safetensors>=0.4"],
    # `mmjudge serve`: an ASGI app under uvicorn, as llama-cpp-python's and vLLM's servers are.
    "serve": ["starlette>=0.27", "uvicorn>=0.23"],
    # The `openai` judge backend sends through the official client (transport, Azure, the Batch API).
    "api": ["openai>=1.40"],
    # PAC-S and Polos tokenize as OpenAI's clip.tokenize: ftfy's text repair, and OpenAI's BPE vocabulary from
    # the copy open-clip-torch installs (so nothing is downloaded); Polos reads the hparams.yaml beside its file.
    "pac-s": ["ftfy>=6.1", "open-clip-torch>=3.0"],
    "polos": ["ftfy>=6.1", "open-clip-torch>=3.0", "pyyaml>=6.0"],
    # InfoMetIC reads the authors' region features from their LMDB; captions tokenize as OpenAI's clip.tokenize.
    "infometic": ["lmdb>=1.4", "ftfy>=6.1", "open-clip-torch>=3.0"],
    # EXPERT merges its LoRA adapter into the LLaVA judge with peft.
    "expert": ["peft>=0.13", "safetensors>=0.4"],
    # Tests drive the apps through gradio_client and a real Chromium (selenium + Debian's chromium-driver),
    # check Long-CLIP conversion against open_clip, and train VELA with peft.
    "test": [
        "pytest>=8",
        "nltk>=3.9",
        "matplotlib>=3.7",
        "gguf>=0.10",
        "pycocoevalcap>=1.2",
        "bert-score>=0.3.13",
        "pandas>=2.0",
        "gradio>=6.0",
        "gradio_client>=1.0",
        "selenium>=4.20",
        "huggingface-hub>=0.30",
        "peft>=0.13",
        "safetensors>=0.4",
        "open-clip-torch>=3.0",
        "ftfy>=6.1",
        "pyyaml>=6.0",
        "lmdb>=1.4",  # InfoMetIC's region features (a tiny LMDB in the authors' layout)
        "num2words>=0.5",  # SmolVLM's processor, for the tiny model of every judge family
        "starlette>=0.27",
        "uvicorn>=0.23",
        "openai>=1.40",  # the official client, as a peer of `mmjudge serve`
        "ruff==0.17.6",  # lint and format (pyproject.toml), checked by .ci/run; pinned so the rules do not move
    ],
}

setup(
    name="mmjudge",
    version=VERSION,
    description="Automatic, per-criterion evaluation of text written by vision-language models.",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",  # tomllib from 3.11, tomli (a CORE dependency on 3.10) before
    packages=find_packages(include=["mmjudge", "mmjudge.*"]),
    package_data={
        "mmjudge": ["py.typed", "prompts/*.toml", "examples/*", "judges/openai/*.toml", "reproduce/tables/*.toml"]
    },
    include_package_data=True,
    install_requires=CORE,
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["mmjudge=mmjudge.cli:main"]},
    cmdclass={"build_py": BuildWithEvaluateShells},
)
