"""Head-to-head judging (``HarmonicEval.compare``, ``mmjudge compare``): both orders, exact antisymmetry,
position bias cancelled and reported, failures never a preference, the stream/part-file machinery.

Scripted judges give exact, hand-checkable numbers; the tiny VLM (random weights) proves the plumbing and
exact antisymmetry on a real model path, never quality."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
import pytest
from PIL import Image

from mmjudge import HarmonicEval
from mmjudge.cli import main
from mmjudge.judges.base import innermost
from mmjudge.judges.requests import RatingResult
from mmjudge.metrics.harmonic_eval.preference import combine_orders
from mmjudge.testing import ScriptedJudge

SLOTS = re.compile(r"(?:Text|Caption|Answer|Expression) A: (.*)\n(?:Text|Caption|Answer|Expression) B: (.*)\n")
GOOD, BAD = "A brown dog runs on the sand.", "dog dog sand the."
# Per criterion: the judge's preference for GOOD, its extra for the first slot, its tie probability
# (dyadic numbers, so the arithmetic below is exact in floating point).
TRUTH = {
    "correctness": (0.75, 0.125, 0.0),
    "fluency": (0.875, -0.0625, 0.0),
    "clarity": (0.5, 0.25, 0.25),
}


def biased_judge(truth=TRUTH) -> ScriptedJudge:
    """Answers (first better, second better, tie) = text preference (1 − tie) + β for the first slot."""

    def answer(request):
        first, _second = SLOTS.search(request.turns[0].text).groups()
        q, beta, tie = truth[request.group]
        q_first = q if first == GOOD else 1 - q
        return [q_first * (1 - tie) + beta, (1 - q_first) * (1 - tie) - beta, tie]

    return ScriptedJudge(answer)


def test_a_known_position_bias_is_cancelled_exactly_and_reported():
    he = HarmonicEval(judge=biased_judge(), criteria=list(TRUTH), cache=False)
    out = he.compare([GOOD, BAD], [BAD, GOOD], images=[Image.new("RGB", (8, 8))] * 2, progress=False)
    for criterion, (q, beta, tie) in TRUTH.items():
        preference = q * (1 - tie) + tie / 2  # the tie counts half for each
        assert out[criterion] == [preference, 1 - preference], criterion
        assert out[f"{criterion}_position_bias"] == [beta, beta]
        assert out[f"mean_{criterion}_position_bias"] == beta
        assert out[f"{criterion}_tie"] == [tie, tie]
    # Correctness: GOOD first 0.875 vs 0.125, BAD first 0.375 vs 0.625: the text decides, not the slot.
    assert out["correctness_slot_following"] == [0.0, 0.0]
    # Clarity: q = 1/2, β = 1/4: the first slot wins in both orders, whatever text sits there.
    assert out["clarity_slot_following"] == [1.0, 1.0]
    assert out["clarity_verdict"] == ["tie", "tie"]
    assert out["correctness_verdict"] == ["a", "b"] and out["verdict"][0] == "a"


def test_compare_is_exactly_one_minus_the_swapped_compare_with_any_numbers():
    rng = np.random.default_rng(0)
    ab, ba = rng.dirichlet(np.ones(3), size=(50, 5)), rng.dirichlet(np.ones(3), size=(50, 5))
    answered = rng.random((50, 5)) > 0.1
    one, other = combine_orders(ab, ba, answered, partial=True), combine_orders(ba, ab, answered, partial=True)
    both = np.isfinite(one.preference)
    assert np.array_equal(one.preference[both] + other.preference[both], np.ones(both.sum()))
    assert np.array_equal(one.preference[both], 1 - other.preference[both])
    assert np.array_equal(one.overall + other.overall, np.ones(50))
    assert np.array_equal(one.position_bias[both], other.position_bias[both])
    assert np.array_equal(np.isnan(one.preference), ~answered)


def no_mass_judge(silent="fluency", order_only=None):
    """Puts no probability on any answer letter for ``silent`` (in every order, or only when GOOD is first)."""

    def answer(request):
        if request.group == silent:
            first = SLOTS.search(request.turns[0].text).group(1)
            if order_only is None or first == order_only:
                return RatingResult(raw=[0.0, 0.0, 0.0], greedy=" I")
        return [0.6, 0.3, 0.1]

    return ScriptedJudge(answer)


def test_a_pair_without_answer_mass_is_a_failure_not_a_half():
    he = HarmonicEval(judge=no_mass_judge(), criteria=["fluency", "clarity"], cache=False)
    with pytest.warns(UserWarning, match=r"1 of 1 pairs got no preference: fluency 1 \(no_rating\)"):
        out = he.compare([GOOD], [BAD], progress=False)
    assert math.isnan(out["fluency"][0]) and out["fluency"][0] != 0.5
    assert out["fluency_status"] == ["no_rating"] and "order AB" in out["fluency_note"][0]
    assert out["fluency_verdict"] == [None] and math.isnan(out["fluency_position_bias"][0])
    assert math.isnan(out["overall"][0])  # the overall needs every criterion (partial_overall=False)
    assert out["failures"] == {"fluency": {"no_rating": 1}} and out["scored"]["fluency"] == 0
    assert out["clarity_status"] == ["ok"] and out["clarity"][0] == 0.5  # 0.6/0.3 from both slots cancel
    partial = HarmonicEval(judge=no_mass_judge(), criteria=["fluency", "clarity"], cache=False, partial_overall=True)
    with pytest.warns(UserWarning, match=r"every pair got an overall preference, but not every criterion: fluency 1"):
        assert partial.compare([GOOD], [BAD], progress=False)["overall"] == [0.5]


def test_one_silent_order_fails_the_pair_and_names_the_order():
    he = HarmonicEval(judge=no_mass_judge(order_only=BAD), criteria=["fluency"], cache=False)
    out = he.compare([GOOD], [BAD], progress=False)  # BAD is first in order BA
    assert out["fluency_status"] == ["no_rating"] and out["fluency_note"][0].startswith("order BA")
    swapped = he.compare([BAD], [GOOD], progress=False)  # now BAD is A: order AB
    assert swapped["fluency_note"][0].startswith("order AB")


def test_errors_and_low_mass_are_statuses_as_for_ratings():
    def answer(request):
        if request.group == "fluency":
            return RatingResult(raw=[0.0] * 3, error="HTTP 500 after 3 retries")
        return [0.1, 0.1, 0.05]  # mass 0.25 < min_mass 0.5

    he = HarmonicEval(judge=ScriptedJudge(answer), criteria=["fluency", "clarity"], cache=False)
    out = he.compare([GOOD], [BAD], progress=False)
    assert out["fluency_status"] == ["error"] and "HTTP 500" in out["fluency_note"][0]
    assert out["clarity_status"] == ["low_mass"] and out["clarity_mass"] == [0.25]
    lenient = HarmonicEval(judge=ScriptedJudge(answer), criteria=["clarity"], cache=False, min_mass=0)
    assert lenient.compare([GOOD], [BAD], progress=False)["clarity_status"] == ["ok"]


def test_two_judge_calls_per_criterion_and_the_cache_answers_the_swapped_compare(tmp_path):
    he = HarmonicEval(judge="dummy", cache=str(tmp_path / "c.sqlite"))
    images = [Image.new("RGB", (32, 32), c) for c in ("red", "blue", "green")]
    a, b = ["A red square.", "A blue sky.", "Green."], ["Red.", "A blue square on white.", "A green field."]
    out = he.compare(a, b, images=images, progress=False)
    dummy = innermost(he.judge)
    assert dummy.calls == 2 * len(he.criteria) * len(a)
    back = he.compare(b, a, images=images, progress=False)
    assert dummy.calls == 2 * len(he.criteria) * len(a)  # the same requests: every answer from the cache
    for name in ["overall", *he.criteria]:
        assert [x + y for x, y in zip(out[name], back[name])] == [1.0, 1.0, 1.0]
    he.pairwise().spec.check_result(out, len(a))


def test_identical_texts_are_an_exact_tie():
    he = HarmonicEval(judge="dummy", cache=False)
    out = he.compare(["A dog."], ["A dog."], images=[Image.new("RGB", (8, 8))], progress=False)
    assert all(out[c] == [0.5] for c in ["overall", *he.criteria]) and out["verdict"] == ["tie"]


def test_explanations_follow_the_verdict_in_order_ab():
    judge = biased_judge()
    he = HarmonicEval(judge=judge, criteria=["fluency"], cache=False)
    out = he.compare([GOOD], [BAD], explain=True, progress=False)
    assert out["fluency_explanation"] == ["scripted explanation"]


def test_the_tiny_vlm_gives_exactly_antisymmetric_preferences_and_shares_the_image_prefix(tiny_llava_dir):
    he = HarmonicEval(model=tiny_llava_dir, cache=False, min_mass=0, batch_size=8)
    images = [Image.new("RGB", (40, 30), c) for c in ("red", "navy")]
    a, b = ["A red square on a white wall.", "A navy blue square."], ["Red.", "A dark photo of the sea at night."]
    out = he.compare(a, b, images=images, progress=False)
    stats = he.judge.stats
    assert stats.requests == 2 * len(he.criteria) * len(a)
    assert stats.tokens < stats.unshared_tokens  # both orders (and both image criteria) share the image prefix
    back = he.compare(b, a, images=images, progress=False)
    for name in ["overall", *he.criteria]:
        assert all(math.isfinite(v) for v in out[name])
        assert [x + y for x, y in zip(out[name], back[name])] == [1.0, 1.0], name
        assert out[f"{name}_status" if name != "overall" else "verdict"] is not None


# ------------------------------------------------------------------------------------------------ CLI
@pytest.fixture
def files(tmp_path):
    Image.new("RGB", (16, 16), "white").save(tmp_path / "p.png")
    texts_a = ["A white square.", "=HYPERLINK(evil)", "A blank page."]
    texts_b = ["White.", "A cat.", "An empty white image."]
    for name, texts in (("a.jsonl", texts_a), ("b.jsonl", texts_b)):
        with open(tmp_path / name, "w") as f:
            for k, text in enumerate(texts):
                f.write(json.dumps({"id": f"x{k}", "text": text, "image": "p.png"}) + "\n")
    return tmp_path


def test_cli_compares_two_files_into_csv_resumes_and_neutralises_formulas(files, capsys):
    out = files / "pairs.csv"
    args = ["compare", "--a", str(files / "a.jsonl"), "--b", str(files / "b.jsonl"), "--judge", "dummy", "--no-cache"]
    assert main([*args, "--output", str(out), "--quiet"]) == 0
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    assert header[:5] == ["id", "task", "text_a", "text_b", "primary"]
    assert {"overall", "fluency", "fluency_status", "fluency_note", "fluency_position_bias"} <= set(header)
    assert lines[2].split(",")[2] == "'=HYPERLINK(evil)"
    assert main([*args, "--output", str(out)]) == 0
    assert "complete already" in capsys.readouterr().out


def test_cli_json_rows_and_the_summary(files, capsys):
    args = ["compare", "--a", str(files / "a.jsonl"), "--b", str(files / "b.jsonl"), "--judge", "dummy"]
    assert main([*args, "--no-cache", "--format", "jsonl", "--criteria", "fluency,clarity"]) == 0
    captured = capsys.readouterr()
    rows = [json.loads(line) for line in captured.out.splitlines()]
    assert [r["id"] for r in rows] == ["x0", "x1", "x2"] and all(0 <= r["fluency"] <= 1 for r in rows)
    assert "slot" in captured.err and "signature: mmjudge=" in captured.err


def test_cli_csv_on_stdout_is_written_as_score_writes_it(files, capsys):
    args = ["compare", "--a", str(files / "a.jsonl"), "--b", str(files / "b.jsonl"), "--judge", "dummy", "--no-cache"]
    assert main([*args, "--format", "csv", "--criteria", "fluency"]) == 0
    out = capsys.readouterr().out
    assert out.count("\r\n") == 4 and "\n" not in out.replace("\r\n", "")  # CRLF: a CR in a text stays in its cell
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    assert [r["id"] for r in rows] == ["x0", "x1", "x2"] and rows[1]["text_a"] == "'=HYPERLINK(evil)"


def test_cli_refuses_files_of_different_lengths_and_names_mismatched_items(files, capsys):
    (files / "short.jsonl").write_text('{"id": "x0", "text": "White."}\n')
    args = ["compare", "--a", str(files / "a.jsonl"), "--judge", "dummy", "--no-cache"]
    assert main([*args, "--b", str(files / "short.jsonl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--a holds 3 items and --b 1" in err[0]
    with open(files / "other.jsonl", "w") as f:
        for k in (0, 9, 2):
            f.write(json.dumps({"id": f"x{k}", "text": "x", "image": "p.png"}) + "\n")
    # Every row is written; the pair that cannot be compared keeps A's id, and the status says so (as score's 4).
    assert main([*args, "--b", str(files / "other.jsonl"), "--format", "jsonl"]) == 4
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert "--a has id 'x1' here but --b has id 'x9'" in rows[1]["error"] and rows[0].get("error") is None
    assert [r["id"] for r in rows] == ["x0", "x1", "x2"]


def test_cli_input_errors_name_the_flag_that_gave_the_file(files, capsys):
    a, b = str(files / "a.jsonl"), str(files / "b.jsonl")
    for flags, named in ((["--a", "nope.jsonl", "--b", b], "--a nope.jsonl"), (["--a", a, "--b", "x/"], "--b x/")):
        assert main(["compare", *flags, "--judge", "dummy", "--no-cache"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and named in err[0] and "--input" not in err[0], err


def test_cli_counts_pairs_without_answer_and_strict_exits_3(capsys):
    args = ["compare", "--text-a", "A dog.", "--text-b", "A cat.", "--judge", "dummy", "--no-cache"]
    assert main([*args, "--criteria", "fluency", "--set", "mass=0", "--strict"]) == 3
    out = capsys.readouterr().out
    assert "1 of 1 pairs got no preference: fluency 1 (no_rating)" in out
    assert "fluency" in out and "no_rating" in out


# ------------------------------------------------------------------------------------------ API judge
def test_an_api_judge_compares_through_the_cache_with_exact_letter_probabilities(tmp_path, monkeypatch):
    """The ``openai`` judge against a toy vLLM server (tests/helpers/toy_api_servers.py) whose vocabulary is given the
    answer letters: it continues the forced ``Verdict: `` prefix and returns each letter's exact probability;
    the preference equals the one combined by hand from the server's own distributions, and the swapped
    comparison is answered by the cache."""

    import toy_api_servers as toy
    from mmjudge.judges.openai.judge import OpenAIJudge

    vocab = [*toy.VOCAB, "A", "B", "C", " A", " B", " C"]
    monkeypatch.setattr(toy, "VOCAB", vocab)
    monkeypatch.setattr(toy, "IDS", {t: i for i, t in enumerate(vocab)})
    server = toy.ToyServer("vllm")
    try:
        judge = OpenAIJudge(base_url=server.url, retry_sleep_scale=0.001, max_concurrency=1)
        he = HarmonicEval(judge=judge, criteria=["fluency"], cache=str(tmp_path / "c.sqlite"), min_mass=0)
        out = he.compare([GOOD], [BAD], progress=False)
        answers = [(b, d) for b, d in server.answers if "Text A:" in str(b["messages"])]
        assert (
            len(answers) == 2 and "config=pairwise" in str(out["signature"]) and "mass=exact" in str(out["signature"])
        )
        by_first = {}
        for body, dists in answers:
            first = SLOTS.search(body["messages"][0]["content"] + "\n").group(1)
            raw = np.array(toy.expected_raw(dists, 0, ("A", "B", "C")))
            by_first[first] = raw / raw.sum()
        ab, ba = by_first[GOOD], by_first[BAD]
        win_a, win_b = (ab[0] + ba[1]) / 2, (ab[1] + ba[0]) / 2
        assert out["fluency"][0] == pytest.approx(0.5 + (win_a - win_b) / 2, abs=1e-12)
        assert out["fluency_position_bias"][0] == pytest.approx(((ab[0] + ba[0]) - (ab[1] + ba[1])) / 4, abs=1e-12)
        asked = len(server.answers)
        back = he.compare([BAD], [GOOD], progress=False)
        assert len(server.answers) == asked  # both orders were in the cache
        assert back["fluency"][0] + out["fluency"][0] == 1.0
    finally:
        server.close()


def test_pair_sources_shard_and_skip_in_step(tmp_path):
    """Each process reads its share of A and the same positions of B; a resumed run skips the same rows of both."""
    from mmjudge.pairwise.sources import open_pairs

    for name in ("a", "b"):
        with open(tmp_path / f"{name}.jsonl", "w") as f:
            for k in range(7):
                f.write(json.dumps({"id": f"x{k}", "text": f"{name} text {k}"}) + "\n")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    whole = [(p["id"], p["text_a"], p["text_b"], p["_i"]) for p in open_pairs(a, b)]
    assert whole[3] == ("x3", "a text 3", "b text 3", 3)
    shares = [list(open_pairs(a, b, shard=(rank, 3))) for rank in range(3)]
    assert [(p["id"], p["text_a"], p["text_b"], p["_i"]) for share in shares for p in share] == whole
    assert all(p["text_b"] == f"b text {p['_i']}" for share in shares for p in share)
    second = open_pairs(a, b, shard=(1, 3))
    resumed = [(p["text_a"], p["text_b"]) for p in second.items(skip=1)]
    assert resumed == [(t_a, t_b) for _, t_a, t_b, _ in whole[second.first + 1 : second.first + second.total]]


@pytest.mark.slow
def test_cli_compare_under_torchrun_writes_once_and_equals_one_process(files, tmp_path):
    """Two processes (torchrun, gloo on the CPU) each compare their share of the pairs; the merged output equals
    one process's, and only the main process speaks."""
    import os
    import subprocess
    import sys

    outputs = {}
    for processes in (1, 2):
        out = tmp_path / f"pairs{processes}.jsonl"
        args = ["compare", "--a", str(files / "a.jsonl"), "--b", str(files / "b.jsonl"), "--judge", "dummy"]
        args += ["--output", str(out), "--cache", str(tmp_path / f"cache{processes}.sqlite")]
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        cmd = [sys.executable, *(launcher if processes > 1 else []), "-m", "mmjudge.cli", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.count("wrote 3 rows") == 1
        outputs[processes] = [json.loads(line) for line in out.read_text().splitlines()]
    assert outputs[2] == outputs[1] and len(outputs[1]) == 3


def test_custom_criteria_need_their_own_pairwise_prompts(tmp_path):
    """A rating prompt set with a criterion the pairwise set lacks: one line saying what to add; a pairwise file
    that has it compares (its id in the signature)."""
    rating = tmp_path / "mine.toml"
    rating.write_text(
        'name = "mine"\nversion = "3"\n[tasks.ic]\ninput = "Caption: {text}"\n'
        '[criteria.humour]\nsees_image = false\ntemplate = "How funny is this, 1 to 5?"\n'
    )
    he = HarmonicEval(judge="dummy", cache=False, prompts=str(rating))
    with pytest.raises(ValueError, match=r"has no comparison for criterion 'humour'.*\[comparisons.humour\]"):
        he.compare(["A dog."], ["A cat."], progress=False)
    pairs = tmp_path / "mine_pairs.toml"
    pairs.write_text(
        'name = "mine_pairs"\nversion = "2"\nchoices = ["A", "B", "C"]\n'
        '[inputs]\nic = "A: {text_a}\\nB: {text_b}"\ntext_only = "A: {text_a}\\nB: {text_b}"\n'
        '[comparisons.humour]\ntemplate = "Which caption is funnier? A, B or C (equal)."\n'
    )
    out = he.pairwise(str(pairs)).compute(["A dog."], ["A cat."], progress=False)
    assert "prompts=mine@3+mine_pairs@2" in out["signature"] and 0 <= out["humour"][0] <= 1


def test_a_text_only_judge_is_asked_only_the_text_criteria_in_both_orders():
    """A judge that cannot see images compares the texts on the criteria that read the text only (both orders
    each); the image criteria get status needs_image (NaN, not a failure) and the overall preference weighs the
    criteria it compared — as HarmonicEval's ratings do. Before, the image criteria were sent with the image
    and came back 'ok'."""
    from PIL import Image

    from mmjudge.judges.base import innermost
    from mmjudge.metrics.harmonic_eval.metric import HarmonicEval
    from mmjudge.testing import ScriptedJudge

    judge = ScriptedJudge(lambda r: [0.6, 0.2, 0.2], sees_images=False)
    he = HarmonicEval(judge=judge, cache=False)
    out = he.compare(["A dog runs."], ["A dog run."], images=[Image.new("RGB", (8, 8))], progress=False)
    asked = innermost(he.judge).requests
    assert len(asked) == 3 * 2 and {r.group for r in asked} == {"clarity", "fluency", "conciseness"}
    assert all(r.image is None for r in asked)
    assert out["correctness_status"] == ["needs_image"] and math.isnan(out["correctness"][0])
    assert out["fluency_status"] == ["ok"] and out["failures"] == {}
    assert out["scored"]["overall"] == 1 and out["scored"]["correctness"] == 0 and out["scored"]["fluency"] == 1
    assert out["overall"][0] == pytest.approx(out["fluency"][0])  # every compared criterion says the same
