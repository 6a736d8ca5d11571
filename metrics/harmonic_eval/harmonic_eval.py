"""HarmonicEval as an `evaluate` metric: a thin shell over `mmjudge.HarmonicEval`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{ohi2025harmoniceval,
  title={HarmonicEval: Multi-modal, Multi-task, Multi-criteria Automatic Evaluation Using a Vision Language Model},
  author={Ohi, Masanari and Kaneko, Masahiro and Okazaki, Naoaki and Inoue, Nakamasa},
  year={2025}
}
"""

_DESCRIPTION = """\
HarmonicEval rates a text written by a vision-language model on five criteria (Correctness,
Completeness, Clarity, Fluency, Conciseness) with a VLM judge. Each criterion score is the expected
rating under the judge's 1-5 rating-token distribution (score smoothing); the overall score weights
the criteria by sigma_c^(-2(1-gamma)/gamma), sigma_c the standard deviation of that distribution.
Tasks: image captioning (ic), VQA (vqa), document VQA (vdu), referring expressions (reg, with a box).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the texts to evaluate (captions, answers, expressions).
    images (`list` of images, optional): PIL images, paths or bytes; needed by the criteria that look
        at the image (Correctness and Completeness by default) and by the REG task.
    questions (`list` of `str`, optional): the questions, for the `vqa` and `vdu` tasks.
    boxes (`list` of 4 numbers, optional): the target box per text for `reg` (COCO x, y, w, h).
    task (`str`, optional): `ic`, `vqa`, `vdu` or `reg`; defaults to the task given at load time.
    explain (`bool`, optional): also return one explanation per criterion.
Returns:
    overall (`list` of `float`): per-sample overall scores (1-5).
    correctness, completeness, clarity, fluency, conciseness (`list` of `float`): smoothed scores,
        with `<criterion>_sigma`, `<criterion>_weight` and `<criterion>_mass` beside each.
    mean_overall, mean_<criterion> (`float`): means over the samples.
    signature (`str`): package version, judge model and revision, prompt set, gamma, decoding.
Examples:
    >>> import evaluate
    >>> from PIL import Image
    >>> he = evaluate.load("harmonic_eval", judge="dummy", cache=False)  # hash-based stand-in judge
    >>> out = he.compute(predictions=["A dog runs on the beach."], images=[Image.new("RGB", (32, 32))])
    >>> [round(out[c][0], 4) for c in ("overall", "correctness", "fluency")]
    [2.841, 3.428, 3.2931]
    >>> out["correctness_status"], round(sum(out[f"{c}_weight"][0] for c in ("correctness", "completeness",
    ...     "clarity", "fluency", "conciseness")), 6)
    (['ok'], 1.0)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HarmonicEval(shell.EngineMetric):
    ENGINE = "harmonic_eval"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/stjohn2007/HarmonicEval"]

    def _compute(self, predictions, images=None, questions=None, boxes=None, task=None, explain=None, progress=True):
        return self._engine_compute(
            predictions=predictions,
            images=images,
            questions=questions,
            boxes=boxes,
            task=task,
            explain=explain,
            progress=progress,
        )
