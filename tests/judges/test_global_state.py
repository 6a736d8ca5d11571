"""Loading and running a judge must not change process-wide state that other code relies on."""

import torch

from mmjudge import HarmonicEval


def test_a_judge_leaves_autograd_on(tiny_lm_dir):
    # Loading once switched gradients off for the whole process, which broke VELA training run later.
    assert torch.is_grad_enabled()
    he = HarmonicEval(model=tiny_lm_dir, cache=False, criteria=["fluency"], min_mass=0)
    he.compute(predictions=["A dog runs."], progress=False)
    assert torch.is_grad_enabled()
    layer = torch.nn.Linear(2, 1)
    layer(torch.ones(1, 2)).sum().backward()
    assert layer.weight.grad is not None
