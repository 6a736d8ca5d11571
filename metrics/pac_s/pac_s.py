"""PAC-S / RefPAC-S / PAC-S++ / RefPAC-S++ (and their sentence averages) as an `evaluate` metric: a thin shell
over `mmjudge.metrics.pac_s.PACScore`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{sarto2023positive,
  title={{Positive-Augmented Contrastive Learning for Image and Video Captioning Evaluation}},
  author={Sarto, Sara and Barraco, Manuele and Cornia, Marcella and Baraldi, Lorenzo and Cucchiara, Rita},
  booktitle={Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition},
  year={2023}
}
@article{sarto2025positive,
  title={{Positive-Augmented Contrastive Learning for Vision-and-Language Evaluation and Training}},
  author={Sarto, Sara and Moratelli, Nicholas and Cornia, Marcella and Baraldi, Lorenzo and Cucchiara, Rita},
  journal={International Journal of Computer Vision},
  year={2025}
}
"""

_DESCRIPTION = """\
PAC-S = 2 * max(cos(CLIP text("A photo depicts " + caption), CLIP image), 0) with the authors' fine-tuned
CLIP (ViT-B/32, or OpenCLIP ViT-L/14); RefPAC-S = harmonic mean of PAC-S and the best cosine between the
caption and its references. PAC-S++ configurations read the authors' LoRA checkpoints. The `_avg`
configurations (VELA's PAC-S_avg / PAC-S++_avg) average PAC-S over the caption's sentences.
Configurations: pac_s, ref_pac_s, pac_s_plus, ref_pac_s_plus, pac_s_avg, pac_s_plus_avg.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list` of images): PIL images, paths or bytes, one per caption.
    references (`list` of `list` of `str`, the `ref_*` configurations): reference captions per caption.
Returns:
    the configuration's score per caption (`pac_s`, `ref_pac_s`, `pac_s_plus`, ... `pac_s_avg`) and its
    `mean_...`; `ref_*`: also `pac_s` / `pac_s_plus` and `ref_cosine`; `*_avg`: also `sentences`;
    `signature` (names the checkpoint by its SHA-256).
Examples:
    >>> import evaluate, tempfile
    >>> from PIL import Image
    >>> from mmjudge.tiny_models.checkpoints import tiny_pac_s
    >>> files = tiny_pac_s(tempfile.mkdtemp(), seed=1)  # random weights in the authors' format: plumbing only
    >>> pac = evaluate.load("pac_s", "ref_pac_s", **files)  # real use: checkpoint="clip_ViT-B-32.pth"
    >>> out = pac.compute(
    ...     predictions=["A dog runs.", "A red cat. It sleeps."],
    ...     images=[Image.new("RGB", (48, 40), "red"), Image.new("RGB", (40, 48), "blue")],
    ...     references=[["a dog"], ["a cat", "red"]],
    ... )
    >>> [round(v, 4) for v in out["pac_s"]], [round(v, 4) for v in out["ref_pac_s"]]
    ([0.2897, 0.1679], [0.4135, 0.2763])
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PacS(shell.EngineMetric):
    ENGINE = "pac_s"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/aimagelab/pacscore", "https://arxiv.org/abs/2303.12112"]

    def _compute(self, predictions, images, references=None, progress=True):
        return self._engine_compute(predictions=predictions, images=images, references=references, progress=progress)
