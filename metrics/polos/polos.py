"""Polos as an `evaluate` metric: a thin shell over `mmjudge.metrics.polos.Polos`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{wada2024polos,
  title={{Polos: Multimodal Metric Learning from Human Feedback for Image Captioning}},
  author={Wada, Yuiga and Kaneda, Kanta and Saito, Daichi and Sugiura, Komei},
  booktitle={Proceedings of the IEEE/CVF Conference on Computer Vision and Pattern Recognition},
  pages={13559--13568},
  year={2024}
}
"""

_DESCRIPTION = """\
Polos combines SimCSE-RoBERTa sentence embeddings of the caption and each reference with raw CLIP ViT-B/32
features of the image, caption and reference, and a feed-forward head trained on human judgments
(Polaris) gives a score in (0, 1); the caption's score is the best over its references. It reads the
authors' `reprod.ckpt` (PyTorch Lightning) without Lightning.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): candidate captions.
    images (`list` of images): PIL images, paths or bytes, one per caption.
    references (`list` of `list` of `str`): reference captions, at least one per caption.
Returns:
    polos (`list` of `float`), mean_polos (`float`), signature (`str`: names the checkpoint by its SHA-256).
Examples:
    >>> import evaluate, tempfile
    >>> from PIL import Image
    >>> from mmjudge.tiny_models.checkpoints import tiny_polos
    >>> files = tiny_polos(tempfile.mkdtemp())  # random weights in the authors' layout: plumbing only
    >>> polos = evaluate.load("polos", **files)  # real use: checkpoint="reprod/reprod.ckpt"
    >>> out = polos.compute(
    ...     predictions=["A dog runs.", "A red cat. It sleeps."],
    ...     images=[Image.new("RGB", (48, 40), "red"), Image.new("RGB", (40, 48), "blue")],
    ...     references=[["a dog"], ["a cat", "red"]],
    ... )
    >>> [round(v, 4) for v in out["polos"]]
    [0.4953, 0.4974]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Polos(shell.EngineMetric):
    ENGINE = "polos"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/keio-smilab24/Polos", "https://arxiv.org/abs/2402.18091"]

    def _compute(self, predictions, images, references=None, progress=True):
        return self._engine_compute(predictions=predictions, images=images, references=references, progress=progress)
