"""VELA as an `evaluate` metric: a thin shell over `mmjudge.metrics.vela.VELA`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{matsuda2025vela,
  title={VELA: An LLM-Hybrid-as-a-Judge Approach for Evaluating Long Image Captions},
  author={Matsuda, Kazuki and Wada, Yuiga and Kotsuki, Seitaro and Sugiura, Komei},
  year={2025}
}
"""

_DESCRIPTION = """\
VELA scores long image captions (about 100 words) on Descriptiveness, Relevance and Fluency (0-1). An
instruction LLM reads the references and the candidate in one forward pass (no generation), Long-CLIP
compares the image with the candidate, and a trained head maps both to the three scores; `vela` is their
mean. It needs a checkpoint trained with `mmjudge train-vela` and the Long-CLIP folder it was trained with.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the long captions to evaluate.
    images (`list` of images): PIL images, paths or bytes, one per caption.
    references (`list` of `list` of `str`): reference captions, at least one per caption.
Returns:
    vela (`list` of `float`): mean of the three criterion scores (0-1).
    descriptiveness, relevance, fluency (`list` of `float`): the criterion scores (0-1).
    mean_vela, mean_descriptiveness, mean_relevance, mean_fluency (`float`): means over the samples.
    signature (`str`): package version, LLM and CLIP identities, checkpoint fingerprint, prompt version.
Examples:
    A checkpoint written by `mmjudge train-vela`, here an untrained one over tiny random-weight models
    (plumbing only: the numbers mean nothing; a real checkpoint and Long-CLIP give meaningful ones):

    >>> import evaluate, tempfile
    >>> from PIL import Image
    >>> from mmjudge.metrics.vela import new_vela
    >>> from mmjudge.testing import tiny_clip, tiny_text_lm
    >>> llm, clip = tiny_text_lm(tempfile.mkdtemp()), tiny_clip(tempfile.mkdtemp(), max_position_embeddings=248)
    >>> checkpoint = new_vela(llm, clip, device="cpu", projection_dim=16, seed=42).save(tempfile.mkdtemp())
    >>> vela = evaluate.load("vela", checkpoint=checkpoint, clip_model=clip, llm=llm, device="cpu")
    >>> out = vela.compute(predictions=["a dog runs on the beach near the water"],
    ...                    images=[Image.new("RGB", (40, 30), "red")], references=[["a dog on a beach"]])
    >>> [round(out[k][0], 4) for k in ("vela", "descriptiveness", "relevance", "fluency")]
    [0.5045, 0.5225, 0.5094, 0.4817]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VELA(shell.EngineMetric):
    ENGINE = "vela"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://huggingface.co/datasets/Ka2ukiMatsuda/LongCap-Arena"]

    def _compute(self, predictions, images, references, progress=True):
        return self._engine_compute(predictions=predictions, images=images, references=references, progress=progress)
