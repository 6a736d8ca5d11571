"""FLEUR / RefFLEUR as an `evaluate` metric: a thin shell over `mmjudge.metrics.fleur.FLEUR`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{lee2024fleur,
  title={FLEUR: An Explainable Reference-Free Evaluation Metric for Image Captioning Using a Large Multimodal Model},
  author={Lee, Yebin and Park, Imseong and Kang, Myungjoo},
  booktitle={Proceedings of ACL},
  year={2024}
}
"""

_DESCRIPTION = """\
FLEUR asks a vision-language model (LLaVA-1.5-13B in the paper) to rate a caption of an image from 0.0
to 1.0 with the published prompt, then smooths the printed "0.xy" with the judge's digit probabilities
(first decimal /10, second decimal /100; "1.0" -> 0.9 p(0) + p(1)). RefFLEUR (config `reffleur`) also
shows reference captions. Optional explanations ("Why? Tell me the reason.").
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list` of images): PIL images, paths or bytes, one per caption.
    references (`list` of `list` of `str`, optional): reference captions per text (config `reffleur`).
    explain (`bool`, optional): also return one explanation per caption.
Returns:
    score (`list` of `float`): smoothed scores in [0, 1] (NaN when the judge printed no score).
    raw_score (`list` of `float`): the number the judge prints.
    method (`list` of `str`): "fast" (teacher-forced) or "generate" (reference fallback) per caption.
    mean_score (`float`), signature (`str`).
Examples:
    >>> import evaluate
    >>> from PIL import Image
    >>> fleur = evaluate.load("fleur", judge="dummy", cache=False)  # hash-based stand-in: prints no score
    >>> out = fleur.compute(predictions=["A dog runs on the beach."], images=[Image.new("RGB", (32, 32))])
    >>> out["score"], out["score_status"], out["failures"]
    ([nan], ['no_rating'], {'score': {'no_rating': 1}})
    >>> sorted(k for k in out if k not in ('scored', 'failures'))
    ['mean_score', 'method', 'raw_score', 'score', 'score_note', 'score_status', 'signature']
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Fleur(shell.EngineMetric):
    ENGINE = "fleur"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/Yebin46/FLEUR", "https://aclanthology.org/2024.acl-long.205/"]

    def _compute(self, predictions, images, references=None, explain=None, progress=True):
        return self._engine_compute(
            predictions=predictions, images=images, references=references, explain=explain, progress=progress
        )
