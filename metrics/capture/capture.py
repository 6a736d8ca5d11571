"""CAPTURE (detailed captions, scene-graph matching) as an `evaluate` metric: a thin shell over
`mmjudge.metrics.capture.CAPTURE`."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@article{dong2024benchmarking,
  title={Benchmarking and Improving Detail Image Caption},
  author={Dong, Hongyuan and Li, Jiawen and Wu, Bohong and Wang, Jiacong and Zhang, Yuan and Guo, Haoyuan},
  journal={arXiv preprint arXiv:2405.19092},
  year={2024}
}
"""

_DESCRIPTION = """\
CAPTURE parses a caption and each of its references, sentence by sentence, into scene graphs with the FACTUAL
T5 parser (lizhuang144/flan-t5-base-VG-factual-sg), keeps the objects, attributes and relations whose heads
are nouns of the text, matches the candidate's with the reference's in three stages (exact, WordNet synonyms,
all-mpnet-base-v2 similarity) and combines the F1s as (0.5 objects + 0.5 attributes + 0.2 relations) / 1.2;
an item's score is the mean over its references. The authors' capture-metric package computes the same on
CUDA GPUs only; this runs on any device, offline, given NLTK's data (punkt_tab,
averaged_perceptron_tagger_eng, wordnet) and the package's stop-word list (pip install --no-deps
capture-metric==0.1.13).
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the candidate (detailed) captions.
    references (`list` of `list` of `str`): the reference captions of each candidate.
Returns:
    capture (`list` of `float`): CAPTURE per candidate, in [0, 1]; object_f1, attribute_f1, relation_f1: the
    F1 of each kind of element (means over references); `mean_...` of each; `signature`: the parser, encoder,
    weights, stop words and NLTK data that decided the numbers.
Examples:
    >>> import evaluate, tempfile
    >>> from mmjudge.tiny_models import tiny_nltk_data, tiny_scene_graph_parser, tiny_sentence_encoder
    >>> work = tempfile.mkdtemp()  # random-weight parser and encoder, a tiny tagger: plumbing only
    >>> capture = evaluate.load(
    ...     "capture",
    ...     parser=tiny_scene_graph_parser(work + "/parser"),  # real use: the defaults (the authors' models)
    ...     encoder=tiny_sentence_encoder(work + "/encoder"),
    ...     nltk_data=tiny_nltk_data(work + "/nltk"),  # real use: NLTK's own data
    ...     stop_words=["image", "background"],
    ... )
    >>> out = capture.compute(
    ...     predictions=["A red car is parked near a tall building.", "Two dogs run on the grass."],
    ...     references=[["A red car near the building. The sky is blue."], ["A dog on grass.", "Dogs play."]],
    ... )
    >>> [round(v, 4) for v in out["capture"]]
    [0.0, 0.3472]
    >>> out["signature"].split("|")[1]
    'metric=capture'
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Capture(shell.EngineMetric):
    ENGINE = "capture"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = ["https://github.com/foundation-multimodal-models/CAPTURE", "https://arxiv.org/abs/2405.19092"]

    def _compute(self, predictions, references, progress=True):
        return self._engine_compute(predictions=predictions, references=references, progress=progress)
