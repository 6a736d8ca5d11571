"""SPICE through the jar path, end to end, on a stand-in jar of ours (tests/helpers/spice_standin.py): the
input file, the command line, the class path, the output parsing ("All" -> f, categories, null -> NaN), the
per-item and corpus values and the cache folder. The real spice-1.0.jar cannot run here (no registry ships
Stanford CoreNLP 3.6.0's jars, and Java 17 has no Nashorn): what its absence and that failure look like is
tested too."""

import math

import numpy as np
import pytest

from mmjudge.errors import MissingDependencyError
from mmjudge.metrics.baselines import ptb_tokenize
from mmjudge.metrics.baselines.metric import Baselines
from mmjudge.metrics.baselines.spice import CORENLP_JARS, SpiceScorer, missing_corenlp
from spice_standin import build_spice_folder, expected_scores, java_tools_available

pytestmark = pytest.mark.skipif(not java_tools_available(), reason="needs java and javac (CI installs Java 17)")

CANDIDATES = ["Two red cars on the street.", "A big dog.", "A cat sleeps in the sun!"]
REFERENCES = [
    ["Two red cars are parked on a street.", "A blue car near a wall."],
    ["A small dog runs.", "The dog is big."],
    ["A cat is sleeping."],
]


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    return build_spice_folder(tmp_path_factory.mktemp("spice"))


def test_spice_runs_the_jar_as_pycocoevalcap_does_and_reads_every_score(standin, tmp_path):
    spice_dir, _ = standin
    cache = tmp_path / "spice-cache"
    metric = Baselines("spice", spice_dir=str(spice_dir), cache_dir=str(cache), memory="1G")
    out = metric.compute(predictions=CANDIDATES, references=REFERENCES)
    cands, refs = ptb_tokenize(CANDIDATES), [ptb_tokenize(r) for r in REFERENCES]
    expected = [expected_scores(c, r) for c, r in zip(cands, refs)]
    assert out["spice"] == pytest.approx(expected, abs=1e-12)
    assert min(expected) > 0 and max(expected) < 1  # values that could have been wrong
    assert out["corpus_spice"] == pytest.approx(np.mean(expected), abs=1e-12)
    for category in ("Object", "Attribute", "Relation", "Cardinality", "Color", "Size"):
        want = [expected_scores(c, r, category) for c, r in zip(cands, refs)]
        got = out[f"spice_{category.lower()}"]
        assert [math.isnan(x) for x in got] == [math.isnan(x) for x in want], category
        assert [x for x in got if not math.isnan(x)] == pytest.approx([x for x in want if not math.isnan(x)])
    assert math.isnan(out["spice_color"][2]) and out["spice_color"][0] == pytest.approx(2 / 3)  # null -> NaN
    # pycocoevalcap's command line, run in the jar's folder; the cache is SPICE's -cache folder
    argv = (cache / "argv.txt").read_text().splitlines()
    assert argv[0].endswith("input.json") and argv[1:] == [
        "-cache",
        str(cache),
        "-out",
        argv[4],
        "-subset",
        "-silent",
    ]
    assert "spice_jar=" in out["signature"] and "corenlp=3.6.0" in out["signature"]
    assert "tokenizer=ptb-python@1" in out["signature"]


def test_corenlp_jars_outside_lib_join_the_class_path(tmp_path, monkeypatch):
    spice_dir, corenlp = build_spice_folder(tmp_path, corenlp_in_lib=False)
    scorer = SpiceScorer(spice_dir=spice_dir, corenlp_dir=corenlp, cache_dir=tmp_path / "c")
    assert scorer.command("in.json", "out.json")[1:4] == ["-Xmx8G", "-cp", scorer.command("i", "o")[3]]
    corpus, per_item = scorer.compute_score(["a red dog"], [["a dog"]])
    assert per_item["spice"][0] == pytest.approx(expected_scores("a red dog", ["a dog"]))
    # the environment variable names the folder too
    monkeypatch.setenv("MMJUDGE_CORENLP_DIR", str(corenlp))
    assert SpiceScorer(spice_dir=spice_dir, cache_dir=tmp_path / "c").corenlp == corenlp


def test_missing_corenlp_jars_are_one_line_naming_them_and_where_they_go(tmp_path):
    spice_dir, corenlp = build_spice_folder(tmp_path)
    (corenlp / CORENLP_JARS[1]).unlink()
    with pytest.raises(MissingDependencyError) as err:
        Baselines("spice", spice_dir=str(spice_dir))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        "SPICE needs Stanford CoreNLP 3.6.0 (stanford-corenlp-3.6.0.jar and stanford-corenlp-3.6.0-models.jar): "
        f"stanford-corenlp-3.6.0-models.jar not found in {corenlp}"
    )
    assert "corenlp_dir=" in message and "MMJUDGE_CORENLP_DIR" in message
    assert missing_corenlp(spice_dir=spice_dir) == message


def test_the_java_15_nashorn_failure_is_said_in_one_line(standin, tmp_path, monkeypatch):
    spice_dir, _ = standin
    monkeypatch.setenv("SPICE_STANDIN_FAIL", "nashorn")
    metric = Baselines("spice", spice_dir=str(spice_dir), cache_dir=str(tmp_path))
    with pytest.raises(MissingDependencyError, match=r"^SPICE 1\.0 writes its output through the Nashorn JavaScript"):
        metric.compute(predictions=["a dog"], references=[["a dog"]])


def test_the_nashorn_failure_is_one_line_at_the_cli_not_a_traceback(standin, tmp_path, monkeypatch, capsys):
    from mmjudge.cli import main

    spice_dir, _ = standin
    monkeypatch.setenv("SPICE_STANDIN_FAIL", "nashorn")
    argv = ["score", "--metric", "baselines", "--config", "spice", "--set", f"spice_dir={spice_dir}"]
    argv += ["--set", f"cache_dir={tmp_path}", "--text", "a dog", "--references", "a dog runs"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "mmjudge score: error: SPICE 1.0 writes its output through the Nashorn JavaScript engine, which Java 15 "
        "removed: run it with a Java 8 to 14 runtime (java=/path/to/java)"
    )


def test_spice_options_are_checked_before_java_runs(standin):
    spice_dir, _ = standin
    with pytest.raises(ValueError, match=r"Expected argument `memory` to be a Java heap size such as '8G'"):
        Baselines("spice", spice_dir=str(spice_dir), memory="lots")
    with pytest.raises(MissingDependencyError, match=r"'no-such-java' is not an executable here"):
        Baselines("spice", spice_dir=str(spice_dir), java="no-such-java")
    with pytest.raises(ValueError, match=r"Options \['idf'\] do not apply to the 'spice' configuration"):
        Baselines("spice", idf=True)


def test_repeated_rows_run_the_jar_once_per_distinct_item_with_every_rows_values(standin, tmp_path, monkeypatch):
    spice_dir, _ = standin
    metric = Baselines("spice", spice_dir=str(spice_dir), cache_dir=str(tmp_path), memory="1G")
    sent = []
    run = metric.scorer.compute_score
    monkeypatch.setattr(metric.scorer, "compute_score", lambda c, r: sent.append(len(c)) or run(c, r))
    order = [0, 1, 0, 2, 0, 1]  # a meta-evaluation's shape: one row per judgment of each (candidate, references)
    out = metric.compute(predictions=[CANDIDATES[k] for k in order], references=[REFERENCES[k] for k in order])
    assert sent == [3]
    cands, refs = ptb_tokenize(CANDIDATES), [ptb_tokenize(r) for r in REFERENCES]
    expected = [expected_scores(cands[k], refs[k]) for k in order]
    assert out["spice"] == pytest.approx(expected, abs=1e-12)
    assert out["corpus_spice"] == pytest.approx(np.mean(expected), abs=1e-12)  # the mean over the rows
    color = [expected_scores(cands[k], refs[k], "Color") for k in order]
    assert [math.isnan(x) for x in out["spice_color"]] == [math.isnan(x) for x in color] == [0, 1, 0, 1, 0, 1]
    assert [out["spice_color"][k] for k in (0, 2, 4)] == pytest.approx([color[0]] * 3)


def test_corenlp_jars_that_are_not_corenlp_are_one_line(tmp_path, capsys):
    """Files with the right names but not CoreNLP's classes (here: empty jars): Java cannot load CoreNLP."""
    import zipfile

    from mmjudge.cli import main

    spice_dir, corenlp = build_spice_folder(tmp_path)
    for name in CORENLP_JARS:
        zipfile.ZipFile(corenlp / name, "w").close()
    argv = ["score", "--metric", "baselines", "--config", "spice", "--set", f"spice_dir={spice_dir}"]
    argv += ["--set", f"cache_dir={tmp_path / 'c'}", "--text", "a dog", "--references", "a dog runs"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "mmjudge score: error: SPICE could not load Stanford CoreNLP's classes: the stanford-corenlp-3.6.0.jar and "
        "stanford-corenlp-3.6.0-models.jar it was given are not complete CoreNLP 3.6.0 jars"
    )
