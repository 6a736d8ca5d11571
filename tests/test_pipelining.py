"""Batches launched before the previous one is read (``BatchedJudge.pipelined``) give the same answers, in
the same order, as one batch at a time; the order of work is launch k+1, then read k."""

import numpy as np
from PIL import Image

from mmjudge.judges import RatingRequest, Turn, load_judge
from mmjudge.judges.batched import _answered


def test_batch_k_plus_one_is_launched_before_batch_k_is_read():
    events = []

    def prepare(items):
        events.append(("prepare", items[0]))
        return items[0]

    def launch(work):
        events.append(("launch", work))
        return work

    def collect(work):
        events.append(("collect", work))
        return [work]

    batches = [[0], [1], [2]]
    answered = list(_answered(batches, ["a", "b", "c"], prepare, (launch, collect), prefetch=False))
    assert answered == [([0], ["a"]), ([1], ["b"]), ([2], ["c"])]
    launched_and_read = [e for e in events if e[0] != "prepare"]
    assert launched_and_read == [
        ("launch", "a"),
        ("launch", "b"),
        ("collect", "a"),
        ("launch", "c"),
        ("collect", "b"),
        ("collect", "c"),
    ]
    with_prefetch = list(_answered(batches, ["a", "b", "c"], prepare, (launch, collect), prefetch=True))
    assert with_prefetch == answered


def test_pipelined_ratings_equal_one_batch_at_a_time(tiny_family_dir):
    judge = load_judge("transformers", model=tiny_family_dir("qwen2_vl"), batch_size=2)
    assert judge.pipelined
    images = [Image.new("RGB", (56 + 14 * k, 56), (60 * k, 90, 200)) for k in range(3)]
    requests = [
        RatingRequest([Turn("user", f"Rate caption {k}: {'a square ' * (k + 1)}")], image=img, answer_prefix="Score: ")
        for k, img in enumerate(images)
    ] + [RatingRequest([Turn("user", "How fluent is: a dog runs.")], answer_prefix="Score: ")]
    pipelined = [r.raw for r in judge.rate(requests, progress=False)]
    judge.pipelined = False
    one_at_a_time = [r.raw for r in judge.rate(requests, progress=False)]
    assert np.abs(np.array(pipelined) - np.array(one_at_a_time)).max() == 0
    assert len(judge.plan(requests)) >= 2  # several batches, so the pipeline really overlapped them
