"""CLIPScore / RefCLIPScore as an `evaluate` metric: a thin shell over `mmjudge.metrics.clip_score.CLIPScore`."""

import datasets
import evaluate
import mmjudge
from mmjudge.evaluate_modules import split_init_kwargs

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
and its reference captions. Long-CLIP checkpoints (248 text positions) are supported.
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
    >>> 0.0 <= out["clip_score"][0] <= 2.5
    True
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ClipScore(evaluate.Metric):
    def __init__(self, model=None, **engine_kwargs):
        config = engine_kwargs.get("config_name") or "clip_score"
        evaluate_kwargs, engine_kwargs = split_init_kwargs(engine_kwargs)
        super().__init__(**evaluate_kwargs)
        self.engine = mmjudge.load("clip_score", config, model=model, **engine_kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # References travel as a compute keyword (`reference_captions`): evaluate reserves the name
            # `references` for a feature column, and a column cannot hold a list per text here.
            features=datasets.Features({"predictions": datasets.Value("string"), "images": datasets.Image()}),
            reference_urls=["https://github.com/jmhessel/clipscore", "https://arxiv.org/abs/2104.08718"],
        )

    def compute(self, *, references=None, **kwargs):
        """Score `predictions` of `images`; `references` (a list of captions per prediction) for the reference-based config."""
        return super().compute(reference_captions=references, **kwargs)

    def _compute(self, predictions, images, reference_captions=None):
        return self.engine.compute(predictions=predictions, images=images, references=reference_captions)

