"""CLIPScore / RefCLIPScore as an `evaluate` metric: a thin shell over `mmjudge.metrics.clip_score.CLIPScore`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{hessel2021clipscore,
  title={CLIPScore: A Reference-free Evaluation Metric for Image Captioning},
  author={Hessel, Jack and Holtzman, Ari and Forbes, Maxwell and Le Bras, Ronan and Choi, Yejin},
  booktitle={Proceedings of EMNLP},
  year={2021}
}
"""

_DESCRIPTION = """\
CLIP-S = 2.5 * max(cos(CLIP text("A photo depicts " + caption), CLIP image), 0) with ViT-B/32.
RefCLIP-S (config `ref_clip_score`) = harmonic mean of CLIP-S and the best cosine between the caption
and its reference captions. CLIP-S_avg (config `clip_score_avg`) is the mean CLIP-S over the caption's
sentences (VELA's long-caption baseline). Long-CLIP checkpoints (248 text positions) are supported.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list` of images): PIL images, paths or bytes, one per caption.
    references (`list` of `list` of `str`, optional): reference captions per text (config `ref_clip_score`).
Returns:
    clip_score (`list` of `float`), mean_clip_score (`float`); with `ref_clip_score`: ref_clip_score,
    mean_ref_clip_score, ref_cosine; signature (`str`).
Examples:
    >>> import evaluate, tempfile
    >>> from PIL import Image
    >>> from mmjudge.testing import tiny_clip
    >>> clip = evaluate.load("clip_score", model=tiny_clip(tempfile.mkdtemp()))  # random weights: plumbing only
    >>> out = clip.compute(predictions=["a dog on a beach"], images=[Image.new("RGB", (32, 32))])
    >>> round(out["clip_score"][0], 4), out["scored"]
    (0.0466, {'clip_score': 1})
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClipScore(shell.EngineMetric):
    ENGINE = "clip_score"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/jmhessel/clipscore", "https://arxiv.org/abs/2104.08718"]

    def _compute(self, predictions, images, references=None, progress=True):
        return self._engine_compute(predictions=predictions, images=images, references=references, progress=progress)
