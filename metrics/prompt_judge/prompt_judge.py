"""Prompt-only VLM judges (G-VEval, GPT-FLEUR, VELA's GPT-4o rows) as an `evaluate` metric: a thin shell over
`mmjudge.metrics.prompt_judge.PromptJudge`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{tong2025gveval,
  title={G-VEval: A Versatile Metric for Evaluating Image and Video Captions Using GPT-4o},
  author={Tong, Tony Cheng and He, Sirui and Shao, Zhiwen and Yeung, Dit-Yan},
  booktitle={Proceedings of AAAI},
  year={2025}
}
@inproceedings{lee2024fleur,
  title={FLEUR: An Explainable Reference-Free Evaluation Metric for Image Captioning Using a Large Multimodal Model},
  author={Lee, Yebin and Park, Imseong and Kang, Myungjoo},
  booktitle={Proceedings of ACL},
  year={2024}
}
"""

_DESCRIPTION = """\
Judges that need only a prompt: a VLM writes an answer holding a number and the score is the expectation of
that number under the probabilities of the tokens it wrote there. Configurations: `g_veval` (G-VEval's
reference-free prompt), `g_veval_ref_only`, `g_veval_combined` (the authors' prompts and reading), `gpt_fleur`,
`gpt_reffleur` (FLEUR's prompts, FLEUR's smoothing on an API judge), `vela_gpt4o`, `vela_gpt4o_refs` (a stand-in
for VELA Table 1's GPT-4o rows: the authors' prompt was not available).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list` of images, optional): PIL images, paths or bytes (configurations that show the image).
    references (`list` of `list` of `str`, optional): reference captions (configurations that show them).
Returns:
    score (`list` of `float`) — or one list per perspective and `overall` for `vela_gpt4o*` — with
    `_printed`, `_status`, `_note` and `_response` per sample; `mean_*` and `signature`.
Examples:
    >>> import evaluate
    >>> from PIL import Image
    >>> g = evaluate.load("prompt_judge", "g_veval", judge="dummy", cache=False)  # stand-in: writes no score
    >>> out = g.compute(predictions=["A dog runs on the beach."], images=[Image.new("RGB", (32, 32))])
    >>> out["score_status"]
    ['no_rating']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PromptJudge(shell.EngineMetric):
    ENGINE = "prompt_judge"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/ztangaj/gveval", "https://github.com/Yebin46/FLEUR"]

    def _compute(self, predictions, images=None, references=None, progress=True):
        return self._engine_compute(predictions=predictions, images=images, references=references, progress=progress)
