"""InfoMetIC, InfoMetIC+, InfoCLIP as an `evaluate` metric: a thin shell over `mmjudge.metrics.infometic`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{hu2023infometic,
  title={{InfoMetIC}: An Informative Metric for Reference-free Image Caption Evaluation},
  author={Hu, Anwen and Chen, Shizhe and Zhang, Liang and Jin, Qin},
  booktitle={Proceedings of ACL},
  year={2023}
}
"""

_DESCRIPTION = """\
InfoMetIC scores a caption without references by vision recall (which salient image regions it covers) plus
text precision (which of its words the image supports), from the authors' trained model over CLIP ViT-B/32
region features. InfoMetIC+ adds 100 x cos(image, caption); InfoCLIP is the training-free variant (its R + P
combination is assumed). The image inputs are the authors' precomputed region features (MSCOCO only), found
by the image's file name in their feature folder (`features=`).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list`): one image per caption, by path or file name (its region features are looked up).
Returns:
    infometic / infometic_plus / infoclip (`list` of `float`): the configuration's score per caption.
    vision_recall, text_precision (`list` of `float`): R and P.
    mean_<score> (`float`), signature (`str`).
Examples:
    >>> import evaluate, tempfile
    >>> from mmjudge.tiny_models.infometic import tiny_infometic
    >>> files = tiny_infometic(tempfile.mkdtemp(), ["COCO_val2014_000000000042.jpg"])  # random, in the authors' layout
    >>> infometic = evaluate.load("infometic", "infometic_plus", **files)
    >>> out = infometic.compute(predictions=["A man rides a horse."], images=["COCO_val2014_000000000042.jpg"])
    >>> sorted(k for k in out if k.startswith("mean_"))
    ['mean_clip_cosine', 'mean_infometic', 'mean_infometic_plus', 'mean_text_precision', 'mean_vision_recall']
    >>> round(out["infometic_plus"][0] - out["infometic"][0] - out["clip_cosine"][0], 4)
    0.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Infometic(shell.EngineMetric):
    ENGINE = "infometic"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/HAWLYQ/InfoMetIC", "https://arxiv.org/abs/2305.06002"]

    def _compute(self, predictions, images, progress=True):
        return self._engine_compute(predictions=predictions, images=images, progress=progress)
