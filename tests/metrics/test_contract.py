"""The contract under every metric, judge and front door: declarations, signatures, capabilities,
the model loader and the results layer — each with values worked out by hand."""

import json
import math
import shutil
import warnings

import numpy as np
import pytest
from PIL import Image

import mmjudge
from mmjudge import HarmonicEval
from mmjudge.images import image_digest
from mmjudge.judges import load_judge
from mmjudge.judges.base import JudgeCapabilityError
from mmjudge.judges.requests import RatingRequest, RatingResult, Turn
from mmjudge.metaeval.scores import ScoreTable, score_key
from mmjudge.metrics.base import Metric
from mmjudge.metrics.spec import MetricSpec
from mmjudge.report import Report
from mmjudge.signature import Signature, comparable, parse
from mmjudge.testing import ScriptedJudge, tiny_clip, tiny_text_lm

IMG = Image.new("RGB", (32, 32), "red")
CONFIGS = {
    "harmonic_eval": ["harmonic_eval"],
    "fleur": ["fleur", "reffleur"],
    "expert": ["expert"],
    "infometic": ["infometic", "infometic_plus", "infoclip"],
    "clip_score": ["clip_score", "ref_clip_score", "clip_score_avg"],
    "baselines": ["bleu", "rouge_l", "meteor", "cider", "spice", "bertscore", "bartscore", "coco"],
    "capture": ["capture"],
    "vela": ["vela"],
    "pac_s": ["pac_s", "ref_pac_s", "pac_s_plus", "ref_pac_s_plus", "pac_s_avg", "pac_s_plus_avg"],
    "polos": ["polos"],
    "prompt_judge": [
        "g_veval",
        "g_veval_ref_only",
        "g_veval_combined",
        "gpt_fleur",
        "gpt_reffleur",
        "vela_gpt4o",
        "vela_gpt4o_refs",
    ],
}
PRIMARY = {
    "harmonic_eval": "overall",
    "fleur": "score",
    "reffleur": "score",
    "expert": "score",
    "infometic": "infometic",
    "infometic_plus": "infometic_plus",
    "infoclip": "infoclip",
    "clip_score": "clip_score",
    "ref_clip_score": "ref_clip_score",
    "bleu": "bleu_4",
    "rouge_l": "rouge_l",
    "meteor": "meteor",
    "cider": "cider",
    "spice": "spice",
    "capture": "capture",
    "bertscore": "bertscore_f1",
    "bartscore": "bartscore",
    "coco": "cider",
    "vela": "vela",
    "clip_score_avg": "clip_score_avg",
    "pac_s": "pac_s",
    "ref_pac_s": "ref_pac_s",
    "pac_s_plus": "pac_s_plus",
    "ref_pac_s_plus": "ref_pac_s_plus",
    "pac_s_avg": "pac_s_avg",
    "pac_s_plus_avg": "pac_s_plus_avg",
    "polos": "polos",
    "g_veval": "score",
    "g_veval_ref_only": "score",
    "g_veval_combined": "score",
    "gpt_fleur": "score",
    "gpt_reffleur": "score",
    "vela_gpt4o": "overall",
    "vela_gpt4o_refs": "overall",
}


# ------------------------------------------------------------------------------------ declarations
@pytest.mark.parametrize("name,config", [(n, c) for n, cs in CONFIGS.items() for c in cs])
def test_every_config_declares_inputs_outputs_and_primary(name, config):
    from mmjudge.metrics import METRICS, available_metrics

    assert sorted(CONFIGS) == available_metrics()  # a new metric must be added here
    cls = METRICS.get(name)
    assert issubclass(cls, Metric)
    spec = cls.spec_for(config)
    assert isinstance(spec, MetricSpec) and spec.config == config
    assert spec.primary == PRIMARY[config] and spec.higher_is_better is True
    assert spec.inputs[0].name == "predictions" and spec.inputs[0].item_key == "text"
    assert spec.score_names()[0] == spec.primary


@pytest.mark.parametrize("name,config", [(n, c) for n, cs in CONFIGS.items() for c in cs])
def test_compute_is_the_bases_and_its_help_is_the_declaration(name, config):
    import inspect

    from mmjudge.metrics import METRICS

    cls = METRICS.get(name)
    spec = cls.spec_for(config)
    assert "compute" not in vars(cls)  # a metric implements _score_chunk; compute is the base's
    assert list(inspect.signature(cls.compute).parameters)[0] == "self"  # the class shows its first configuration
    params = spec.compute_signature().parameters
    assert list(params) == [*[i.name for i in spec.inputs], *spec.option_names()]
    always = [p for p in params if params[p].default is inspect.Parameter.empty]
    assert always == [i.name for i in spec.inputs if i.required]
    assert params["progress"].default is True
    text = spec.compute_doc()
    for i in spec.inputs:
        assert f"    {i.name}: {i.description}" in text
    for o in spec.outputs:
        assert f"    {o.name}: {o.description}" in text


def test_help_of_an_instance_compute_lists_its_own_inputs():
    import pydoc

    he = HarmonicEval(judge="dummy", criteria=["fluency"], cache=False)
    page = pydoc.render_doc(he.compute, renderer=pydoc.plaintext)
    assert "compute(*, predictions: collections.abc.Sequence[str], images: " in page
    assert "questions: the question, for VQA and document VQA (optional; required for vqa, vdu)." in page
    assert "fluency_sigma: fluency: standard deviation of the rating distribution (diagnostic)." in page
    assert "correctness" not in page  # this instance's criteria, not the class's
    with pytest.raises(ValueError, match=r"unknown compute keyword 'image' for HarmonicEval; did you mean 'images'\?"):
        he.compute(predictions=["a"], image=[IMG])


def test_metric_outputs_match_their_declaration(tmp_path):
    """Every key a metric returns is declared, and every declared output is there (contract test)."""
    runs = [
        (HarmonicEval(judge="dummy", cache=False), dict(predictions=["a", "b"], images=[IMG, IMG])),
        (
            mmjudge.load("fleur", "reffleur", judge="dummy", cache=False),
            dict(predictions=["a", "b"], images=[IMG, IMG], references=[["r"], ["s"]]),
        ),
        (
            mmjudge.load("expert", judge="dummy", adapter=None, cache=False),
            dict(predictions=["a", "b"], images=[IMG, IMG], explain=True),
        ),
        (
            mmjudge.load("clip_score", "ref_clip_score", model=tiny_clip(tmp_path / "c")),
            dict(predictions=["a", "b"], images=[IMG, IMG], references=[["r"], ["s"]]),
        ),
        (mmjudge.load("baselines", "coco"), dict(predictions=["a dog", "a cat"], references=[["a dog"], ["a cat"]])),
        (
            mmjudge.load("clip_score", "clip_score_avg", model=tiny_clip(tmp_path / "c2")),
            dict(predictions=["a. b", "c"], images=[IMG, IMG]),
        ),
        (
            mmjudge.load("prompt_judge", "vela_gpt4o_refs", judge="dummy", cache=False),
            dict(predictions=["a", "b"], images=[IMG, IMG], references=[["r"], ["s"]]),
        ),
    ]
    from mmjudge.tiny_models.checkpoints import tiny_pac_s, tiny_polos

    pac, pacpp, polos = tiny_pac_s(tmp_path / "p"), tiny_pac_s(tmp_path / "pp", plus=True), tiny_polos(tmp_path / "po")
    for config in ("pac_s", "ref_pac_s", "pac_s_plus", "ref_pac_s_plus", "pac_s_avg", "pac_s_plus_avg"):
        kwargs = dict(predictions=["a. b", "c"], images=[IMG, IMG])
        if config.startswith("ref"):
            kwargs["references"] = [["r"], ["s", "t"]]
        runs.append((mmjudge.load("pac_s", config, **(pacpp if "plus" in config else pac)), kwargs))
    runs.append(
        (mmjudge.load("polos", **polos), dict(predictions=["a", "b"], images=[IMG, IMG], references=[["r"], ["s"]]))
    )
    for metric, kwargs in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = metric.compute(progress=False, **kwargs)
        metric.spec.check_result(out, 2)


def test_an_undeclared_output_fails_the_contract_check():
    he = HarmonicEval(judge="dummy", cache=False, criteria=["fluency"])
    out = he.compute(predictions=["a"], progress=False)
    out["surprise"] = [1.0]
    with pytest.raises(AssertionError, match="undeclared result keys"):
        he.spec.check_result(out, 1)


# -------------------------------------------------------------------------- exact, end to end
def expected_overall(dists, gamma=0.75):
    """HarmonicEval by hand: expectation, σ (floored at 1e-3), weights ∝ σ^(-2(1-γ)/γ)."""
    r = np.arange(1, 6)
    scores, sigmas = [], []
    for p in dists:
        p = np.asarray(p, float) / np.sum(p)
        mu = float((p * r).sum())
        scores.append(mu)
        sigmas.append(max(math.sqrt(float((p * (r - mu) ** 2).sum())), 1e-3))
    w = np.array(sigmas) ** (-2 * (1 - gamma) / gamma)
    w /= w.sum()
    return scores, w.tolist(), float((w * np.array(scores)).sum())


def test_scripted_judge_through_evaluate_gives_the_hand_computed_numbers():
    import evaluate

    dists = {
        "correctness": [0, 0.1, 0.2, 0.3, 0.4],
        "completeness": [0.5, 0.5, 0, 0, 0],
        "clarity": [0, 0, 1, 0, 0],
        "fluency": [0.2, 0.2, 0.2, 0.2, 0.2],
        "conciseness": [0, 0, 0.3, 0.3, 0.3],
    }
    judge = ScriptedJudge(dists)
    he = evaluate.load("metrics/harmonic_eval", judge=judge, cache=False)
    out = he.compute(predictions=["A dog runs."], images=[IMG])
    criteria = list(dists)
    scores, weights, overall = expected_overall([dists[c] for c in criteria])
    for c, s, w in zip(criteria, scores, weights):
        assert out[c][0] == pytest.approx(s, abs=1e-12)
        assert out[f"{c}_weight"][0] == pytest.approx(w, abs=1e-12)
    assert out["overall"][0] == pytest.approx(overall, abs=1e-12)
    # conciseness puts 0.9 on the scale: mass reported raw, scores from the renormalised distribution
    assert out["conciseness_mass"][0] == pytest.approx(0.9)
    # γ = 1 is the plain mean
    plain = HarmonicEval(judge=judge, cache=False, gamma=1.0).compute(
        predictions=["A dog runs."], images=[IMG], progress=False
    )
    assert plain["overall"][0] == pytest.approx(np.mean(scores), abs=1e-12)
    # the image reaches exactly the criteria that look at it, with its digest computed once
    seen = {r.group: r for r in judge.requests}
    assert seen["correctness"].image is not None and seen["fluency"].image is None
    assert seen["correctness"].image_digest == image_digest(IMG)


# ---------------------------------------------------------------------------------- signatures
def test_signature_is_fields_and_round_trips():
    sig = Signature.make("x", prefix="A|b=c%", gamma=0.75, flag=True, names=["a", "b"])
    assert isinstance(sig, str) and sig.fields["prefix"] == "A|b=c%"
    assert parse(str(sig)) == sig.fields
    assert parse(str(sig))["gamma"] == "0.75" and sig["flag"] == "true" and sig["names"] == "a,b"
    assert Signature.from_string(str(sig)) == sig
    assert comparable(sig, sig.with_fields(mmjudge="9.9")) and not comparable(sig, sig.with_fields(gamma=0.5))
    with pytest.raises(ValueError, match="Not a signature field"):
        parse("mmjudge=0.1.0|metric=harmonic_eval|judge=transformers:m@r|float32")


def test_local_models_are_named_by_content_not_place(tmp_path):
    first = tiny_text_lm(tmp_path / "somewhere" / "lm")
    second = tmp_path / "elsewhere"
    shutil.copytree(first, second)
    sigs = [HarmonicEval(model=str(p), cache=False, criteria=["fluency"]).signature for p in (first, second)]
    assert sigs[0] == sigs[1]
    assert str(tmp_path) not in sigs[0] and "/" not in parse(sigs[0])["judge"].split(":", 1)[1]
    fields = parse(sigs[0])
    assert fields["judge"] == "transformers:local" and fields["revision"].startswith("local-")
    assert fields["dtype"] == "float32" and all("=" not in v for v in fields.values())


# -------------------------------------------------------------------------------- capabilities
def test_metrics_check_judge_capabilities_before_building_requests():
    chat_api = load_judge("dummy", teacher_forcing=False)
    with pytest.raises(JudgeCapabilityError, match="FLEUR needs a judge with teacher_forcing"):
        mmjudge.load("fleur", judge=chat_api, cache=False)
    # HarmonicEval takes its documented fallback: the backend reads the first generated rating
    he = HarmonicEval(judge=chat_api, cache=False, criteria=["fluency"])
    assert parse(he.signature)["decoding"] == "first-rating-token"
    assert parse(HarmonicEval(judge="dummy", cache=False).signature)["decoding"] == "forced-prefix-1pass"


def test_low_mass_is_no_score_only_for_exact_masses():
    low = {"fluency": [0.01, 0.01, 0.01, 0.01, 0.01]}
    with pytest.warns(UserWarning, match="1 of 1 items got no rating: fluency 1 \\(low_mass\\)"):
        out = HarmonicEval(judge=ScriptedJudge(low), cache=False, criteria=["fluency"]).compute(
            predictions=["a"], progress=False
        )
    assert math.isnan(out["fluency"][0]) and math.isnan(out["overall"][0]) and out["fluency_status"] == ["low_mass"]
    top_k = HarmonicEval(judge=ScriptedJudge(low, full_distribution=False), cache=False, criteria=["fluency"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kept = top_k.compute(
            predictions=["a"], progress=False
        )  # a top-k mass is a lower bound: it says nothing certain
    assert kept["fluency"] == [3.0] and kept["fluency_status"] == ["ok"]
    assert parse(top_k.signature)["mass"] == "top-k-lower-bound"


def test_requests_are_built_complete():
    req = RatingRequest([Turn("user", "x")], image=IMG)
    assert req.image_digest == image_digest(IMG)
    given = RatingRequest([Turn("user", "x")], image=IMG, image_digest="abc")
    assert given.payload()["image"] == "abc"
    with pytest.raises(ValueError, match="without an image"):
        RatingRequest([Turn("user", "x")], image_digest="abc")
    lower = RatingResult(raw=[0.1, 0.2], exact_mass=False)
    assert RatingResult.from_json(lower.to_json()).exact_mass is False


# -------------------------------------------------------------------------------- model loader
def test_injected_model_gives_the_same_scores_as_its_folder(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = tiny_text_lm(tmp_path / "lm")
    factory = lambda: (AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder))  # noqa: E731
    by_folder = HarmonicEval(
        model=folder, cache=False, criteria=["fluency"], min_mass=0
    )  # random weights: keep the rating
    injected = HarmonicEval(model=factory, cache=False, criteria=["fluency"], min_mass=0)
    a = by_folder.compute(predictions=["A dog runs on the beach."], progress=False)
    b = injected.compute(predictions=["A dog runs on the beach."], progress=False)
    assert a["fluency"] == pytest.approx(b["fluency"], abs=1e-6)
    assert parse(injected.signature)["judge"] == "transformers:injected:llama"
    assert parse(injected.signature)["revision"].startswith("weights-")


def test_one_loader_for_clip_too(tmp_path):
    from transformers import AutoTokenizer, CLIPModel

    folder = tiny_clip(tmp_path / "clip")
    factory = lambda: (CLIPModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder))  # noqa: E731
    a = mmjudge.load("clip_score", model=folder).compute(predictions=["a cat"], images=[IMG], progress=False)
    b = mmjudge.load("clip_score", model=factory).compute(predictions=["a cat"], images=[IMG], progress=False)
    assert a["clip_score"] == pytest.approx(b["clip_score"], abs=1e-5)  # same default preprocessing stats


@pytest.mark.parametrize(
    "kwargs,error,message",
    [
        (dict(dtype="float17"), ValueError, "Expected argument `dtype`"),
        (dict(model="/no/such/folder"), FileNotFoundError, "does not exist"),
    ],
)
def test_loader_mistakes_are_one_clear_sentence(kwargs, error, message, tmp_path):
    kwargs.setdefault("model", tiny_text_lm(tmp_path / "lm"))
    with pytest.raises(error, match=message):
        load_judge("transformers", **kwargs)


def test_empty_model_folder_is_named(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no model files"):
        load_judge("transformers", model=str(tmp_path / "empty"))


# ----------------------------------------------------------------------------- results layer
def test_report_rows_formats_and_nan():
    spec = HarmonicEval.spec_for()
    result = {
        "overall": [4.0, math.nan],
        "fluency": [4.0, 2.0],
        "signature": Signature.make("harmonic_eval", gamma=0.75),
    }
    report = Report.from_result(spec, result, ids=["a", "b"], task="ic")
    assert [r["id"] for r in report.rows] == ["a", "b"]
    assert list(report.rows[0]) == ["id", "task", "primary", "overall", "fluency", "signature"]
    lines = [json.loads(line) for line in report.to_jsonl().splitlines()]
    assert lines[1]["overall"] is None and lines[0]["signature"] == str(result["signature"])
    csv_text = report.to_csv()
    assert csv_text.splitlines()[0] == "id,task,primary,overall,fluency,signature"
    assert csv_text.splitlines()[2].startswith("b,ic,overall,,2.0,")
    frame = report.to_dataframe()
    assert frame.shape == (2, 6) and frame["fluency"].tolist() == [4.0, 2.0]
    assert report.summary()["mean_overall"] == 4.0


def test_report_from_items_keeps_input_order_across_tasks():
    items = [
        {"id": "q1", "text": "yes", "question": "Is it red?", "task": "vqa"},
        {"id": "c1", "text": "A red square.", "task": "ic"},
        {"id": "q2", "text": "no", "question": "Is it blue?", "task": "vqa"},
    ]
    he = HarmonicEval(judge="dummy", cache=False, criteria=["fluency"])
    report = Report.from_items(he, items, keep=["text"])
    assert [(r["id"], r["task"], r["text"]) for r in report.rows] == [
        ("q1", "vqa", "yes"),
        ("c1", "ic", "A red square."),
        ("q2", "vqa", "no"),
    ]
    assert (
        report.rows[1]["fluency"] == he.compute(predictions=["A red square."], task="ic", progress=False)["fluency"][0]
    )
    assert (
        report.rows[0]["fluency"]
        == he.compute(predictions=["yes"], questions=["Is it red?"], task="vqa", progress=False)["fluency"][0]
    )


def test_cli_output_rows_carry_primary_and_signature(tmp_path, capsys):
    from mmjudge.cli import main

    out = tmp_path / "s.jsonl"
    items = tmp_path / "items.jsonl"
    items.write_text(
        json.dumps({"text": "a dog runs", "references": ["a dog runs", "a dog"]})
        + "\n"
        + json.dumps({"text": "two cats", "references": ["a cat sleeps"]})
        + "\n"
    )
    assert (
        main(["score", "--metric", "baselines", "--config", "coco", "--input", str(items), "--output", str(out)]) == 0
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["primary"] for r in rows] == ["cider", "cider"] and parse(rows[0]["signature"])["config"] == "coco"
    table = ScoreTable(
        {r["id"]: {k: v for k, v in r.items() if isinstance(v, float)} for r in rows}, primary=rows[0]["primary"]
    )
    assert score_key(table, "coco") == "cider"
    # One item alone has no CIDEr-D (its idf would be 0 for every n-gram): null with the reason, never 0.0.
    assert (
        main(
            [
                "score",
                "--metric",
                "baselines",
                "--config",
                "cider",
                "--text",
                "a dog runs",
                "--references",
                "a dog runs",
                "--output",
                str(tmp_path / "one.jsonl"),
            ]
        )
        == 0
    )
    [alone] = [json.loads(line) for line in (tmp_path / "one.jsonl").read_text().splitlines()]
    assert (
        alone["cider"] is None and alone["cider_status"] == "needs_corpus" and "needs a corpus" in alone["cider_note"]
    )


def test_metaeval_ranks_by_the_declared_primary_not_a_guess():
    cols = {"a": {"clip_score": 1.0, "ref_clip_score": 0.8, "ref_cosine": 0.7}}
    with pytest.raises(ValueError, match="cannot tell which column"):
        score_key(cols, "ref-clip")  # a plain dict: nothing declared, no 'score' column
    assert score_key(ScoreTable(cols, primary="ref_clip_score"), "ref-clip") == "ref_clip_score"
    from mmjudge.human_judgments import HumanJudgments
    from mmjudge.metaeval import score_items

    hj = HumanJudgments(name="toy", items=[{"id": "a", "task": "ic", "text": "a dog", "references": ["a dog"]}])
    assert score_items(hj, "baselines", "bleu", progress=False).primary == "bleu_4"


def printing_085(lead, d1, d2):
    """A FLEUR judge script that 'prints' 0.85, with these digit distributions at the lead digit and
    the two decimals."""

    def script(request):
        at = request.answer_prefix
        if at == "":
            return RatingResult(raw=lead, greedy="0")
        if at == "0":
            return RatingResult(raw=[0.0] * 10, greedy=".")
        if at == "0.":
            return RatingResult(raw=d1, greedy="8")
        if at == "0.8":
            return RatingResult(raw=d2, greedy="5")
        raise AssertionError(f"unexpected prefix {at!r}")

    return script


def test_fleur_through_evaluate_gives_the_hand_computed_smoothed_score():
    """A scripted judge that 'prints' 0.85: lead digit, dot, first and second decimal, each with a
    known distribution; the smoothed score is Σ p1(d)·d/10 + Σ p2(d)·d/100, exactly."""
    import evaluate

    d1 = [0, 0, 0, 0, 0, 0, 0, 0.2, 0.7, 0.05]  # mass 0.95, greedy "8"
    d2 = [0.1, 0, 0, 0, 0, 0.6, 0.3, 0, 0, 0]  # greedy "5"
    lead = [0.9, 0.1] + [0.0] * 8

    fleur = evaluate.load("metrics/fleur", judge=ScriptedJudge(printing_085(lead, d1, d2)), cache=False)
    out = fleur.compute(predictions=["A red square."], images=[IMG])
    expected = sum(p * d / 10 for d, p in enumerate(d1)) + sum(p * d / 100 for d, p in enumerate(d2))
    assert out["score"][0] == pytest.approx(expected, abs=1e-12) and expected == pytest.approx(
        0.793
    )  # 0.14+0.56+0.045 + 0.03+0.018
    assert out["raw_score"] == [0.85] and out["method"] == ["fast"] and out["mean_score"] == out["score"][0]


def test_signature_fields_change_with_with_fields_and_the_original_stays():
    """Changing a signature's fields is with_fields() (a Signature is a str, so .replace keeps str's meaning);
    the new signature renders, parses back, and leaves the original untouched."""
    sig = Signature.make("x", gamma=0.75)
    changed = sig.with_fields(gamma=0.5)
    assert (
        isinstance(changed, Signature) and parse(str(changed))["gamma"] == "0.5" and str(changed).endswith("|gamma=0.5")
    )
    assert sig.fields["gamma"] == "0.75" and "gamma" not in sig.with_fields(gamma=None).fields


def test_means_follow_one_rule_nan_and_inf_left_out():
    import inspect

    from mmjudge.inputs import finite_mean
    from mmjudge.metrics.base import add_means

    assert finite_mean([1.0, float("nan"), 2, None, float("inf"), -float("inf"), np.float32(3.0)]) == 2.0
    assert math.isnan(finite_mean([float("nan"), float("inf")]))
    assert "nan_policy" not in inspect.signature(add_means).parameters  # it was accepted and ignored
    from mmjudge.metrics.clip_score import CLIPScore

    out = add_means({"clip_score": [0.5, float("inf"), float("nan"), 1.5]}, CLIPScore.spec_for("clip_score"))
    assert out["mean_clip_score"] == 1.0


def test_generation_is_required_where_the_effective_explain_is_known():
    # explain=True at construction used to refuse a non-generating judge outright, although
    # compute(explain=False) never generates; the check now happens where `explain` is final
    silent = load_judge("dummy", can_generate=False)
    he = HarmonicEval(judge=silent, cache=False, criteria=["fluency"], explain=True)
    assert "fluency" in he.compute(predictions=["A dog runs."], explain=False, progress=False)
    with pytest.raises(JudgeCapabilityError, match="can_generate"):
        he.compute(predictions=["A dog runs."], progress=False)
    digits = [0.1] * 10
    printer = ScriptedJudge(
        printing_085(digits, digits, digits), can_generate=False
    )  # its fast path never needs generation
    fleur = mmjudge.load("fleur", judge=printer, cache=False, explain=True)
    assert "explanation" not in fleur.compute(predictions=["A dog."], images=[IMG], explain=False, progress=False)
    with pytest.raises(JudgeCapabilityError, match="can_generate"):
        fleur.compute(predictions=["A dog."], images=[IMG], progress=False)
    with pytest.raises(JudgeCapabilityError, match="can_generate"):
        mmjudge.load("fleur", judge=silent, cache=False, method="generate")


@pytest.mark.parametrize("bad", [0, -5, "many", True])
def test_max_text_chars_is_checked_before_the_judge_is_built(bad):
    for name in ("harmonic_eval", "fleur"):
        with pytest.raises(ValueError, match="`max_text_chars` to be a positive integer or None"):
            mmjudge.load(name, judge="no-such-backend", cache=False, max_text_chars=bad)


def test_fleur_fallback_needs_generation_and_says_so():
    silent = load_judge(
        "dummy", can_generate=False
    )  # never prints a score, so every sample needs the generate fallback
    fleur = mmjudge.load("fleur", judge=silent, cache=False)
    with pytest.raises(JudgeCapabilityError, match=r"FLEUR needs a judge with can_generate \(predictions\[0\]"):
        fleur.compute(predictions=["A dog."], images=[IMG], progress=False)
