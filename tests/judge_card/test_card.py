"""``mmjudge judge-card`` end to end on fixtures in the benchmarks' upstream layouts: verdict files scored by hand,
a scripted judge with known answers through the head-to-head path (both orders), the dummy judge through every
kind of benchmark, resuming, the dry run, and one line for each mistake."""

from __future__ import annotations

import json
import math
import re

import pytest

from judge_benchmarks import write_vl_rewardbench
from mmjudge.cli import main
from mmjudge.judge_card.run import Settings, judge_card
from repo_paths import FIXTURES


@pytest.fixture
def vlrb(tmp_path):
    return str(write_vl_rewardbench(tmp_path / "vlrb"))


@pytest.fixture(autouse=True)
def private_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    monkeypatch.setenv("MMJUDGE_CACHE", str(tmp_path / "judge.sqlite"))


def _by(rows, measure, subset=""):
    return next(r for r in rows if r["measure"] == measure and r["subset"] == subset)


def _write(path, lines):
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def test_verdicts_through_the_cli_give_the_figures_worked_by_hand(vlrb, tmp_path, capsys):
    verdicts = _write(
        tmp_path / "v.jsonl",
        [
            {"id": "RLAIF-V-fx-1", "preferred": 0},  # human 0: right
            {"id": "hallucination_pair-fx-2", "preferred": 0},  # human 1: wrong
            {"id": "wildvision-battle-fx-3", "preferred": 0},  # right
            {"id": "mathverse_fx-4", "preferred": 1},  # right
            {"id": "mmmu-pro_fx-5", "preferred": 0.5},  # a judge tie: half
        ],  # svit_fx-6: no verdict, no answer
    )
    out = tmp_path / "card"
    argv = ["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}"]
    assert main([*argv, "--verdicts", f"vl_rewardbench={verdicts}", "--out", str(out), "--bootstrap", "200"]) == 0
    rows = json.loads((out / "card.json").read_text())
    assert all(set(r) == {"benchmark", "subset", "measure", "value", "low", "high", "n"} for r in rows)
    assert _by(rows, "accuracy")["value"] == pytest.approx(0.7) and _by(rows, "accuracy")["n"] == 5
    assert _by(rows, "accuracy", "general")["value"] == 1.0 and _by(rows, "accuracy", "general")["n"] == 1
    assert _by(rows, "accuracy", "hallucination")["value"] == 0.5
    assert _by(rows, "accuracy", "reasoning")["value"] == 0.75
    assert _by(rows, "accuracy", "MathVerse")["value"] == 1.0 and _by(rows, "accuracy", "POVID")["value"] == 0.0
    assert _by(rows, "macro_accuracy")["value"] == pytest.approx(0.75)
    assert _by(rows, "no_answer")["value"] == pytest.approx(1 / 6)
    low, high = _by(rows, "accuracy")["low"], _by(rows, "accuracy")["high"]
    assert 0.0 <= low <= 0.7 <= high <= 1.0
    signed = json.loads((out / "signature.json").read_text())
    assert (
        signed["sources"]["vl_rewardbench"].startswith("verdicts ")
        and len(signed["verdicts_sha256"]["vl_rewardbench"]) == 64
    )
    assert (out / "card.png").stat().st_size > 1000 and "| vl_rewardbench | — | accuracy | 70.0 |" in (
        out / "card.md"
    ).read_text()
    assert "| vl_rewardbench | — | accuracy | 70.0 |" in capsys.readouterr().out


def test_a_scripted_judge_is_scored_through_both_orders(vlrb, tmp_path):
    """The judge prefers the response without the made-up green ball, except on picture 4: it agrees with people
    on rows 1, 3, 4 and 5 of six, whatever slot each text sits in (no position bias, the orders agree)."""
    from mmjudge.metrics.harmonic_eval.metric import HarmonicEval
    from mmjudge.testing import ScriptedJudge

    def script(request):
        prompt = request.turns[-1].text
        a = re.search(r"\n(?:Answer|Text) A: (.*)\n(?:Answer|Text) B:", prompt).group(1)
        wants_ball = "picture 4" in prompt
        first_better = ("green ball" in a) == wants_ball
        return [0.8, 0.1, 0.1] if first_better else [0.1, 0.8, 0.1]

    judge = ScriptedJudge(script)
    he = HarmonicEval(judge=judge, criteria=["correctness"], cache=False)  # sees the question (picture 4)
    settings = Settings(data_dirs={"vl_rewardbench": vlrb}, out=str(tmp_path / "card"), bootstrap=0, progress=False)
    card = judge_card(["vl_rewardbench"], settings, judge=he)
    rows = card.rows
    assert _by(rows, "accuracy")["value"] == pytest.approx(4 / 6) and _by(rows, "accuracy")["n"] == 6
    assert [_by(rows, "accuracy", g)["value"] for g in ("general", "hallucination", "reasoning")] == [0.5, 0.5, 1.0]
    assert _by(rows, "macro_accuracy")["value"] == pytest.approx(2 / 3)
    assert _by(rows, "position_bias")["value"] == pytest.approx(0.0, abs=1e-12)
    assert _by(rows, "order_agreement")["value"] == 1.0 and _by(rows, "order_agreement")["n"] == 6
    assert len(judge.requests) == 6 * 2  # pairs × both orders
    # A second card resumes from the run's file: no request is sent again, the same rows come out.
    again = judge_card(["vl_rewardbench"], settings, judge=he)
    assert len(judge.requests) == 12
    assert [r for r in again.rows if r["measure"] != "samples_per_s"] == [
        r for r in rows if r["measure"] != "samples_per_s"
    ]


def test_the_dummy_judge_runs_every_kind_of_benchmark_end_to_end(vlrb, tmp_path, capsys):
    flickr = str(FIXTURES / "flickr8k_expert")
    pascal = str(FIXTURES / "pascal50s")
    out = tmp_path / "card"
    argv = ["judge-card", "--judge", "dummy", "--no-cache", "--benchmarks", "vl_rewardbench,pascal50s,flickr8k_expert"]
    argv += ["--data-dir", f"vl_rewardbench={vlrb}", "--data-dir", f"pascal50s={pascal}"]
    argv += ["--data-dir", f"flickr8k_expert={flickr}", "--out", str(out), "--bootstrap", "50", "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "card.json").read_text())
    assert {r["benchmark"] for r in rows} == {"vl_rewardbench", "pascal50s", "flickr8k_expert"}
    vl = [r for r in rows if r["benchmark"] == "vl_rewardbench"]
    assert _by(vl, "accuracy")["n"] == 6 and 0 <= _by(vl, "accuracy")["value"] <= 1
    assert _by(vl, "no_answer")["value"] == 0.0 and _by(vl, "samples_per_s")["value"] > 0
    # The Pascal-50S and Flickr8k fixtures hold no images: the criteria that look at the image cannot be asked, so
    # no pair gets an overall preference and no caption an overall score — counted, never a number.
    pascal = [r for r in rows if r["benchmark"] == "pascal50s"]
    assert _by(pascal, "no_answer")["value"] == 1.0 and _by(pascal, "accuracy")["value"] is None
    flickr = [r for r in rows if r["benchmark"] == "flickr8k_expert"]
    assert _by(flickr, "no_answer")["n"] == 49
    assert "Signature: `mmjudge=" in (out / "card.md").read_text()


def test_dry_run_lists_needs_and_what_is_present(vlrb, capsys):
    assert main(["judge-card", "--benchmarks", "vl_rewardbench,mm_rewardbench", "--dry-run",
                 "--data-dir", f"vl_rewardbench={vlrb}"]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("vl_rewardbench: from judge; data ✓, judge ✗ — missing: no judge and no verdicts")
    assert out[1].startswith(
        "mm_rewardbench: from judge; data ✗, judge ✗ — missing: no data: pass --data-dir mm_rewardbench="
    )


@pytest.mark.parametrize(
    "lines, message",
    [
        (['{"id": "RLAIF-V-fx-1", "preferred": 2}'], "line 1: `preferred` must be 0, 1 or 0.5"),
        (['{"id": "RLAIF-V-fx-1", "preferred": 0}', '{"id": "RLAIF-V-fx-1", "preferred": 1}'], "has a verdict already"),
        (['{"id": "nope", "preferred": 0}'], "1 verdict(s) name ids the benchmark does not have ('nope')"),
        (["{torn"], "line 1: not JSON"),
        (['{"preferred": 0}'], "line 1: expected an `id`"),
    ],
)
def test_a_bad_verdict_file_is_one_line_and_nothing_is_scored(vlrb, tmp_path, capsys, lines, message):
    path = tmp_path / "v.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "card"
    code = main(["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
                 "--verdicts", f"vl_rewardbench={path}", "--out", str(out), "--bootstrap", "0"])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 2 and json.loads((out / "card.json").read_text()) == []
    assert "vl_rewardbench: not run: " in printed.err and message in printed.err
    assert "Traceback" not in printed.out + printed.err


def test_mistakes_in_the_command_are_one_line(vlrb, capsys):
    assert main(["judge-card", "--benchmarks", "vl_rewardbnech", "--dry-run"]) == 2
    assert "Did you mean 'vl_rewardbench'?" in capsys.readouterr().err
    assert main(["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", "vl_rewardbench"]) == 2
    assert "--data-dir expects BENCHMARK=PATH" in capsys.readouterr().err


def test_ratings_verdicts_correlate_with_the_human_scores(tmp_path):
    """Verdicts equal to each caption's mean human score correlate perfectly in rank; reversed, exactly
    negatively: τ-c computed by the meta-evaluation on the same rows."""
    from mmjudge.judge_card.benchmarks import JUDGE_BENCHMARKS
    from mmjudge.judge_card.ratings import read_judgments

    bench = JUDGE_BENCHMARKS["flickr8k_expert"]
    judgments = read_judgments(bench, str(FIXTURES / "flickr8k_expert"), {}, None)
    means: dict[str, list[float]] = {}
    for rating in judgments.ratings:
        means.setdefault(rating["id"], []).append(rating["score"])
    taus = []
    for sign in (1, -1):
        path = _write(
            tmp_path / f"s{sign}.jsonl", [{"id": i, "score": sign * sum(v) / len(v)} for i, v in means.items()]
        )
        settings = Settings(
            data_dirs={"flickr8k_expert": str(FIXTURES / "flickr8k_expert")},
            verdicts={"flickr8k_expert": path},
            bootstrap=0,
        )
        taus.append(_by(judge_card(["flickr8k_expert"], settings).rows, "tau_c")["value"])
    assert taus[0] > 0.5 and taus[1] == pytest.approx(-taus[0]) and not math.isnan(taus[0])


@pytest.mark.slow
def test_smollm2_compares_the_text_criteria_of_real_pairs(smollm2_gguf, vlrb, tmp_path, capsys):
    """The real text-only SmolLM2 on a card: every pair compared on Clarity, Fluency and Conciseness in both
    orders (the image criteria are not asked). It puts only about 20% of its probability on the answer letters,
    under min_mass 0.5: by default every pair is counted as no answer (low_mass), never as a preference; with
    min_mass lowered, every pair is answered — plumbing with a real model, not a verdict on SmolLM2 as a judge."""
    base = [
        "judge-card",
        "--model",
        "smollm2",
        "--benchmarks",
        "vl_rewardbench",
        "--data-dir",
        f"vl_rewardbench={vlrb}",
    ]
    base += ["--limit", "3", "--bootstrap", "0", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "strict")]) == 0
    strict = json.loads((tmp_path / "strict" / "card.json").read_text())
    assert _by(strict, "no_answer")["value"] == 1.0 and _by(strict, "accuracy")["n"] == 0
    assert main([*base, "--set", "min_mass=0.1", "--out", str(tmp_path / "lenient")]) == 0
    rows = json.loads((tmp_path / "lenient" / "card.json").read_text())
    assert _by(rows, "accuracy")["n"] == 3 and _by(rows, "no_answer")["value"] == 0.0
    assert _by(rows, "order_agreement")["n"] == 3 * 3  # pairs × the three text criteria
    signature = json.loads((tmp_path / "lenient" / "signature.json").read_text())["signature"]
    assert "unrated=correctness,completeness" in signature and "min_mass=0.1" in signature
    assert "smollm2" in capsys.readouterr().out


def test_a_card_written_over_its_own_verdicts_is_refused_before_anything_is_touched(vlrb, tmp_path, capsys):
    out = tmp_path / "card"
    out.mkdir()
    verdicts = _write(out / "card.json", [{"id": "RLAIF-V-fx-1", "preferred": 0}])
    before = (out / "card.json").read_bytes()
    code = main(["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
                 "--verdicts", f"vl_rewardbench={verdicts}", "--out", str(out)])  # fmt: skip
    assert code == 2 and (out / "card.json").read_bytes() == before
    err = capsys.readouterr().err
    assert "is the same file as --verdicts vl_rewardbench" in err and "give another --out" in err


@pytest.mark.slow
def test_an_api_judge_on_a_real_llama_cpp_server_reports_its_tokens(llama_server, vlrb, tmp_path):
    """The API path against a real OpenAI-compatible server (llama.cpp over SmolLM2): every pair compared in
    both orders through the server, the card counting the requests and tokens it paid for (no list price for a
    local model: no dollar row), and the usage in signature.json — plumbing, not a judgement of SmolLM2."""
    out = tmp_path / "card"
    argv = ["judge-card", "--judge", "openai", "--set", f"base_url={llama_server}", "--set", "prefill=auto"]
    argv += ["--set", 'criteria=["fluency"]', "--set", "max_concurrency=1", "--no-cache", "--benchmarks"]
    argv += ["vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}", "--limit", "2", "--bootstrap", "0"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    rows = json.loads((out / "card.json").read_text())
    tokens = _by(rows, "tokens")
    assert tokens["n"] == 2 * 2 and tokens["value"] > 0  # pairs × both orders, one criterion
    assert not [r for r in rows if r["measure"] == "cost_usd"]
    assert _by(rows, "no_answer")["n"] == 2 and 0.0 <= _by(rows, "no_answer")["value"] <= 1.0
    signed = json.loads((out / "signature.json").read_text())
    assert signed["usage"]["requests"] == 4 and "judge=openai:" in signed["signature"]


def test_a_multimodal_rewardbench_card_is_accepted_by_the_board(tmp_path):
    """The card judge-card writes for Multimodal RewardBench (an unsplit category is its own reporting category)
    holds each figure once, so the board's card check takes it as written."""
    from types import SimpleNamespace

    from judge_benchmarks import write_mm_rewardbench
    from mmjudge.leaderboard.judge_uploads import read_judge_upload

    data = str(write_mm_rewardbench(tmp_path / "mmrb"))
    verdicts = _write(tmp_path / "v.jsonl", [{"id": "nocaps_101", "preferred": 1}, {"id": "pairs_7", "preferred": 1}])
    out = tmp_path / "card"
    assert main(["judge-card", "--benchmarks", "mm_rewardbench", "--data-dir", f"mm_rewardbench={data}",
                 "--verdicts", f"mm_rewardbench={verdicts}", "--out", str(out), "--bootstrap", "20"]) == 0  # fmt: skip
    rows = json.loads((out / "card.json").read_text())
    keys = [(r["subset"], r["measure"]) for r in rows]
    assert len(keys) == len(set(keys)) and keys.count(("open_generation/correctness_task", "accuracy")) == 1
    subsets = tuple(sorted({r["subset"] for r in rows if r["subset"]}))
    board = SimpleNamespace(card_name="mm_rewardbench", kind="pairs", ids=[], subsets=subsets)
    assert read_judge_upload((out / "card.json").read_bytes(), board, None)["rows"] == rows


@pytest.mark.parametrize("name", [r"$\frac{a}$", r"$\undefinedcmd$", "cost $5 vs $6"])
def test_a_judge_name_that_looks_like_mathtext_is_drawn_as_text(tmp_path, name):
    """The chart's title holds the judge's name as given: matplotlib must not parse it (a malformed `$…$` made
    the card fail after card.json was written)."""
    from mmjudge.judge_card.output import chart

    rows = [{"benchmark": "vl_rewardbench", "subset": "", "measure": "accuracy", "value": 0.6, "low": 0.5,
             "high": 0.7, "n": 10}]  # fmt: skip
    assert chart(name, rows, tmp_path / "card.png") is True
    assert (tmp_path / "card.png").stat().st_size > 1000


def test_an_out_folder_under_a_file_is_one_line_before_any_work(vlrb, tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    code = main(["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
                 "--judge", "dummy", "--out", str(blocker / "card")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"{blocker} is a file, so no folder can be made there; give a folder path." in err
    assert len(err.strip().splitlines()) == 1 and blocker.read_text() == "x"


def test_every_dataset_option_of_a_benchmark_reaches_its_loader(vlrb, tmp_path, capsys):
    """Two --dataset-option for one benchmark both reach the loader (the second used to replace the first, so
    this unknown option was silently dropped); an option for an unknown benchmark is one line."""
    verdicts = _write(tmp_path / "v.jsonl", [{"id": "RLAIF-V-fx-1", "preferred": 0}])
    argv = ["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
            "--verdicts", f"vl_rewardbench={verdicts}", "--bootstrap", "0", "--quiet"]  # fmt: skip
    options = ["--dataset-option", "vl_rewardbench:no_such_key=1", "--dataset-option", "vl_rewardbench:layout=null"]
    assert main([*argv, *options]) == 2
    assert "vl_rewardbench: not run: " in (err := capsys.readouterr().err) and "'no_such_key'" in err
    assert main([*argv, "--dataset-option", "vl_rewardbnech:check_images=false"]) == 2
    err = capsys.readouterr().err
    assert "Unknown judge benchmark 'vl_rewardbnech'. Did you mean 'vl_rewardbench'?" in err


def test_a_confidence_outside_zero_and_one_is_one_line_before_any_benchmark(vlrb, capsys):
    """--confidence 1.5 used to reach numpy's quantile and come back as every benchmark's reason for not running
    ('Quantiles must be in the range [0, 1]')."""
    code = main(["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
                 "--judge", "dummy", "--confidence", "1.5"])  # fmt: skip
    printed = capsys.readouterr()
    assert code == 2 and "Expected argument `confidence` to be in (0, 1), but got 1.5." in printed.err
    assert printed.out == "" and "not run" not in printed.err


def test_a_verdict_path_that_is_no_regular_file_is_said_as_such(vlrb, tmp_path, capsys):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    argv = ["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}", "--dry-run"]
    for path, said in ((fifo, "a named pipe (FIFO), not a regular file"), (tmp_path, "a folder, not a file"),
                       (tmp_path / "none.jsonl", "no such file")):  # fmt: skip
        assert main([*argv, "--verdicts", f"vl_rewardbench={path}"]) == 0
        assert f"missing: --verdicts vl_rewardbench={path}: {said}" in capsys.readouterr().out


def test_a_verdict_file_with_a_byte_order_mark_reads_as_on_the_board(tmp_path):
    """The board's reader drops a UTF-8 byte-order mark (mmjudge.jsonl.decode); --verdicts reads the same file the
    same way instead of calling line 1 'not JSON'."""
    from mmjudge.judge_card.verdicts import read_verdicts

    path = tmp_path / "v.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "preferred": 1}\n{"id": "b", "preferred": null}\n')
    verdicts = read_verdicts(path, "pairs")
    assert verdicts["a"] == 1.0 and math.isnan(verdicts["b"]) and list(verdicts) == ["a", "b"]


def test_a_verdict_file_of_one_endless_line_is_refused_without_reading_it_whole(tmp_path):
    from mmjudge.judge_card.verdicts import MAX_LINE_CHARS, read_verdicts

    path = tmp_path / "v.jsonl"
    path.write_text('{"id": "a", "preferred": 1}\n{"id": "' + "x" * (MAX_LINE_CHARS + 5) + '"}\n')
    with pytest.raises(ValueError, match=r"v\.jsonl line 2: longer than 1,048,576 characters; a verdict line is"):
        read_verdicts(path, "pairs")
    path.write_text('{"id": "a", "preferred": 1}\r\n{"id": "b", "preferred": 0}')  # CRLF, no final newline
    assert read_verdicts(path, "pairs") == {"a": 1.0, "b": 0.0}


def test_the_card_table_names_the_coverage_its_intervals_were_drawn_at(vlrb, tmp_path, capsys):
    verdicts = _write(tmp_path / "v.jsonl", [{"id": "RLAIF-V-fx-1", "preferred": 0}])
    out = tmp_path / "card"
    assert main(["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
                 "--verdicts", f"vl_rewardbench={verdicts}", "--bootstrap", "20", "--confidence", "0.9",
                 "--out", str(out), "--quiet"]) == 0  # fmt: skip
    header = "| benchmark | subset | measure | value | 90% interval | n |"
    assert header in capsys.readouterr().out and header in (out / "card.md").read_text()


def test_items_written_by_two_processes_at_once_both_land_whole(tmp_path):
    """Under torchrun every process writes a judge run's items file. Here a second writer runs to the end while
    the first is half way (as another process would): both finish, no temporary file is left, the file is whole.
    With one shared temporary name the first writer's rename failed (its file had been renamed away)."""
    from mmjudge.judge_card.run import write_items

    path = tmp_path / "runs" / "b.items.jsonl"
    rows = [{"id": f"i{k}", "text": "x" * 100} for k in range(50)]

    def first_writer():
        for k, item in enumerate(rows):
            if k == 25:
                write_items(iter(rows), path)  # the other process, start to end
            yield item

    write_items(first_writer(), path)
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == [r["id"] for r in rows]
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.items.jsonl"]


def test_under_a_launcher_only_the_main_process_writes_and_prints_the_card(vlrb, tmp_path, capsys, monkeypatch):
    """Every torchrun process computes the same card; only rank 0 writes card.json … and prints it (each one
    writing them raced on the same files)."""
    verdicts = _write(tmp_path / "v.jsonl", [{"id": "RLAIF-V-fx-1", "preferred": 0}])
    argv = ["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
            "--verdicts", f"vl_rewardbench={verdicts}", "--bootstrap", "0", "--quiet"]  # fmt: skip
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    assert main([*argv, "--out", str(tmp_path / "rank1")]) == 0
    assert not (tmp_path / "rank1").exists() and "accuracy" not in capsys.readouterr().out
    monkeypatch.setenv("RANK", "0")
    assert main([*argv, "--out", str(tmp_path / "rank0")]) == 0
    assert (
        tmp_path / "rank0" / "card.json"
    ).is_file() and "| vl_rewardbench | — | accuracy |" in capsys.readouterr().out


def test_a_judge_that_cannot_be_built_is_tried_once_and_before_any_data_is_read(vlrb, tmp_path, monkeypatch):
    """A judge that fails to build (a missing model, no API key) was built again for every benchmark, each after
    reading its data; now it is tried once and every benchmark that needs it says the same reason."""
    import mmjudge.metrics.harmonic_eval.metric as he_metric

    tries = []

    def failing(**options):
        tries.append(options)
        raise FileNotFoundError("Cannot load model 'no-such/model'")

    monkeypatch.setattr(he_metric, "HarmonicEval", failing)
    empty = tmp_path / "empty"
    empty.mkdir()  # reading it would fail with another reason
    settings = Settings(data_dirs={"vl_rewardbench": vlrb, "mm_rewardbench": str(empty)}, bootstrap=0, progress=False)
    card = judge_card(["vl_rewardbench", "mm_rewardbench"], settings, judge={"model": "no-such/model"})
    assert len(tries) == 1 and card.rows == []
    assert card.not_run == dict.fromkeys(
        ["vl_rewardbench", "mm_rewardbench"], "FileNotFoundError: Cannot load model 'no-such/model'"
    )


def test_verdicts_beyond_the_limit_are_named_as_such_not_as_unknown_ids(vlrb, tmp_path, capsys):
    verdicts = _write(
        tmp_path / "v.jsonl", [{"id": "RLAIF-V-fx-1", "preferred": 0}, {"id": "svit_fx-6", "preferred": 1}]
    )
    argv = ["judge-card", "--benchmarks", "vl_rewardbench", "--data-dir", f"vl_rewardbench={vlrb}",
            "--verdicts", f"vl_rewardbench={verdicts}", "--bootstrap", "0", "--quiet"]  # fmt: skip
    assert main([*argv, "--limit", "2"]) == 2
    err = capsys.readouterr().err
    assert "1 verdict(s) name ids not among the 2 items read (--limit 2) ('svit_fx-6')" in err
    assert main(argv) == 0  # without the limit both verdicts are the benchmark's
