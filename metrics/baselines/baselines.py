"""Classic captioning metrics (BLEU-1..4, ROUGE-L, METEOR, CIDEr-D, BERTScore, BARTScore) as an
`evaluate` metric: a thin shell over `mmjudge.metrics.baselines.Baselines`, one configuration per metric."""

import evaluate

# A module attribute, not `from ... import EngineMetric`: evaluate instantiates the first metric class
# it finds in this namespace, and that must be the class below (see mmjudge/adapters/evaluate_metric.py).
import mmjudge.adapters.evaluate_metric as shell

_CITATION = """\
@inproceedings{papineni2002bleu, title={BLEU: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing}, booktitle={ACL}, year={2002}}
@inproceedings{lin2004rouge, title={ROUGE: A Package for Automatic Evaluation of Summaries},
  author={Lin, Chin-Yew}, booktitle={Text Summarization Branches Out}, year={2004}}
@inproceedings{denkowski2014meteor,
  title={Meteor Universal: Language Specific Translation Evaluation for Any Target Language},
  author={Denkowski, Michael and Lavie, Alon}, booktitle={WMT}, year={2014}}
@inproceedings{vedantam2015cider, title={CIDEr: Consensus-based Image Description Evaluation},
  author={Vedantam, Ramakrishna and Zitnick, C. Lawrence and Parikh, Devi}, booktitle={CVPR}, year={2015}}
@inproceedings{zhang2020bertscore, title={BERTScore: Evaluating Text Generation with BERT},
  author={Zhang, Tianyi and Kishore, Varsha and Wu, Felix and Weinberger, Kilian Q. and Artzi, Yoav},
  booktitle={ICLR}, year={2020}}
@inproceedings{yuan2021bartscore, title={BARTScore: Evaluating Generated Text as Text Generation},
  author={Yuan, Weizhe and Neubig, Graham and Liu, Pengfei}, booktitle={NeurIPS}, year={2021}}
"""

_DESCRIPTION = """\
Reference-based captioning metrics with the numbers captioning papers report. BLEU-1..4, ROUGE-L
(beta 1.2), CIDEr-D (sigma 6) and METEOR 1.5 reproduce pycocoevalcap exactly, PTB tokenisation and
lower-casing included (tokenisation, BLEU, ROUGE-L and CIDEr-D in pure Python; METEOR runs the official
jar, which needs Java). BERTScore (default roberta-large, layer 17) and BARTScore (default
facebook/bart-large-cnn) load models with transformers. SPICE runs pycocoevalcap's spice-1.0.jar (Java and
Stanford CoreNLP 3.6.0's two jars, which you provide). Configurations: bleu, rouge_l, meteor, cider, spice,
bertscore, bartscore, coco. CIDEr-D's document frequencies come from the references of the whole call.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the candidate texts (captions).
    references (`list` of `list` of `str`): the reference texts of each candidate (at least one each).
Returns (per configuration; every per-sample list comes with `corpus_<key>` and `mean_<key>`):
    bleu: bleu_1 .. bleu_4 (`list` of `float`); corpus_bleu_k is pycocoevalcap's corpus BLEU.
    rouge_l: rouge_l. cider: cider (CIDEr-D). meteor: meteor (corpus_meteor from pooled statistics).
    spice: spice (the "All" F-score) and spice_object .. spice_size (NaN where the references lack the category).
    bertscore: bertscore_precision, bertscore_recall, bertscore_f1. bartscore: bartscore.
    signature (`str`): package version, configuration, tokenizer, model and options.
Examples:
    >>> import evaluate
    >>> cider = evaluate.load("baselines", "cider")
    >>> out = cider.compute(predictions=["A dog runs on the beach.", "Two cats sleep."],
    ...                     references=[["A dog is running on the beach!", "A dog on the sand."],
    ...                                 ["Two cats sleeping."]])
    >>> [round(x, 4) for x in out["cider"]]
    [3.3535, 2.9167]
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Baselines(shell.EngineMetric):
    ENGINE = "baselines"
    DESCRIPTION, CITATION, KWARGS_DESCRIPTION = _DESCRIPTION, _CITATION, _KWARGS_DESCRIPTION
    REFERENCE_URLS = [
        "https://github.com/salaniz/pycocoevalcap",
        "https://github.com/Tiiiger/bert_score",
        "https://github.com/neulab/BARTScore",
    ]

    def _compute(self, predictions, references, progress=True):
        return self._engine_compute(predictions=predictions, references=references, progress=progress)
