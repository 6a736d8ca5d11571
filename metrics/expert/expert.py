"""EXPERT as an `evaluate` metric: a thin shell over `mmjudge.metrics.expert.EXPERT`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@article{kim2025expert,
  title={EXPERT: An Explainable Image Captioning Evaluation Metric with Structured Explanations},
  author={Kim, Hyunjong and Kim, Sangyeop and Jeong, Jongheon and Cho, Yeongjae and Cho, Sungzoon},
  journal={arXiv preprint arXiv:2506.24016},
  year={2025}
}
"""

_DESCRIPTION = """\
EXPERT asks LLaVA-1.5-13B fine-tuned with the authors' LoRA adapter (hjkim811/EXPERT-llava-13b-lora) to score a
caption of an image from 0.0 to 1.0, in LLaVA's llava_v0 conversation (what the authors' script runs), and
smooths the printed number with the probabilities of the digit tokens it generated (first decimal /10, second
/100; "1.0" -> 0.9 p(0) + p(1)). Optional structured explanations (Fluency, Relevance, Descriptiveness).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list` of images): PIL images, paths or bytes, one per caption.
    explain (`bool`, optional): also return the explanation turn, and its three parts.
Returns:
    score (`list` of `float`): smoothed scores in [0, 1] (NaN when the judge printed no number EXPERT can read).
    raw_score (`list` of `float`): the number read from the judge's answer.
    score_status, score_note (`list` of `str`): ok / no_rating, and why.
    mean_score (`float`), signature (`str`).
Examples:
    >>> import evaluate
    >>> from PIL import Image
    >>> expert = evaluate.load("expert", judge="dummy", cache=False)  # hash-based stand-in: prints no score
    >>> out = expert.compute(predictions=["A dog runs on the beach."], images=[Image.new("RGB", (32, 32))])
    >>> out["score"], out["score_status"], out["failures"]
    ([nan], ['no_rating'], {'score': {'no_rating': 1}})
    >>> sorted(k for k in out if k not in ('scored', 'failures'))
    ['mean_score', 'raw_score', 'score', 'score_note', 'score_status', 'signature']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Expert(shell.EngineMetric):
    ENGINE = "expert"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/hjkim811/EXPERT", "https://arxiv.org/abs/2506.24016"]

    def _compute(self, predictions, images, explain=None, progress=True):
        return self._engine_compute(predictions=predictions, images=images, explain=explain, progress=progress)
