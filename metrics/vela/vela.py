"""VELA as an `evaluate` metric: a thin shell over `mmjudge.metrics.vela.VELA`."""

import datasets
import evaluate

import mmjudge
from mmjudge.adapters.evaluate_registry import split_init_kwargs

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
    >>> import evaluate
    >>> vela = evaluate.load("vela", checkpoint="runs/vela/best", clip_model="models/longclip-L")  # doctest: +SKIP
    >>> out = vela.compute(predictions=[caption], images=[image], references=[[ref1, ref2]])  # doctest: +SKIP
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class VELA(evaluate.Metric):
    def __init__(self, checkpoint=None, **engine_kwargs):
        evaluate_kwargs, engine_kwargs = split_init_kwargs(engine_kwargs)
        super().__init__(**evaluate_kwargs)
        self.engine = mmjudge.load("vela", checkpoint=checkpoint, **engine_kwargs)

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            # Only the texts go through evaluate's Arrow buffer; images and references are passed straight
            # to compute() (no PNG round trip, references of any count).
            features=datasets.Features({"predictions": datasets.Value("string")}),
            reference_urls=["https://huggingface.co/datasets/Ka2ukiMatsuda/LongCap-Arena"],
        )

    def compute(self, *, references=None, **kwargs):
        """Score `predictions` of `images` against `references` (a list of captions per prediction)."""
        # evaluate.Metric.compute keeps `references` for a feature column: pass it under another name.
        return super().compute(reference_captions=references, **kwargs)

    def _compute(self, predictions, images=None, reference_captions=None):
        return self.engine.compute(predictions=predictions, images=images, references=reference_captions)
