"""Exact math of score smoothing and harmonic weighting on hand-made distributions."""

import math

import numpy as np
import pytest

from mmjudge.metrics.harmonic_eval.scoring import DEFAULT_SIGMA_FLOOR, aggregate, harmonic_weights, sigma, smooth


def test_smoothing_is_the_expected_rating():
    p = [0.1, 0.2, 0.3, 0.4, 0.0]
    assert smooth(p) == pytest.approx(1 * 0.1 + 2 * 0.2 + 3 * 0.3 + 4 * 0.4)
    assert smooth([0, 0, 0, 0, 1]) == 5.0


def test_smoothing_renormalises_partial_mass():
    # A judge that put only 10% of its mass on the scale: the distribution over the scale is what counts.
    assert smooth([0.0, 0.05, 0.0, 0.05, 0.0]) == pytest.approx(3.0)


def test_sigma_matches_hand_computation():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.0])
    mean = 3.0
    expected = math.sqrt(sum(pi * (r - mean) ** 2 for r, pi in zip(range(1, 6), p)))
    assert sigma(p) == pytest.approx(expected)
    assert sigma([0, 0, 1, 0, 0]) == 0.0
    assert sigma([0.5, 0, 0, 0, 0.5]) == pytest.approx(2.0)


def test_gamma_one_is_uniform_weighting():
    w = harmonic_weights([0.2, 1.0, 3.0], gamma=1.0)
    assert w.tolist() == pytest.approx([1 / 3] * 3)


def test_gamma_half_is_inverse_variance_weighting():
    s = np.array([0.5, 1.0, 2.0])
    w = harmonic_weights(s, gamma=0.5)
    inv = 1 / s**2
    assert w.tolist() == pytest.approx((inv / inv.sum()).tolist())


def test_default_gamma_exponent():
    s = np.array([0.5, 1.0, 2.0])
    w = harmonic_weights(s, gamma=0.75)
    raw = s ** (-2 * (1 - 0.75) / 0.75)  # σ^(-2/3)
    assert w.tolist() == pytest.approx((raw / raw.sum()).tolist())


def test_small_gamma_selects_the_least_variance_criterion():
    w = harmonic_weights([0.9, 0.3, 1.2], gamma=1e-4)
    assert w.tolist() == pytest.approx([0.0, 1.0, 0.0], abs=1e-12)
    assert np.all(np.isfinite(w))


def test_sigma_floor_keeps_one_hot_weights_finite():
    p = np.array([[[0, 0, 0, 0, 1.0], [0, 0, 0, 1.0, 0], [0, 0.5, 0, 0.5, 0]]])
    out = aggregate(p, gamma=0.5)
    assert np.all(np.isfinite(out.weights))
    # Both one-hot criteria sit on the floor and share the weight equally; the σ=1 one gets floor² of it.
    ratio = DEFAULT_SIGMA_FLOOR**2
    expected = np.array([1.0, 1.0, ratio]) / (2 + ratio)
    assert out.weights[0].tolist() == pytest.approx(expected.tolist())
    assert out.overall[0] == pytest.approx(float(expected @ np.array([5.0, 4.0, 3.0])))


def test_aggregate_shapes_and_overall_formula():
    rng = np.random.default_rng(0)
    p = rng.random((7, 5, 5))
    out = aggregate(p, gamma=0.75)
    assert out.overall.shape == (7,)
    assert out.scores.shape == out.sigmas.shape == out.weights.shape == (7, 5)
    assert out.weights.sum(axis=1).tolist() == pytest.approx([1.0] * 7)
    assert out.overall.tolist() == pytest.approx((out.weights * out.scores).sum(axis=1).tolist())
    # The overall score is a convex combination of the criterion scores.
    assert np.all(out.overall >= out.scores.min(axis=1) - 1e-12)
    assert np.all(out.overall <= out.scores.max(axis=1) + 1e-12)


def test_no_smoothing_uses_the_most_probable_rating():
    p = np.array([[[0.1, 0.2, 0.3, 0.4, 0.0], [0.6, 0.0, 0.0, 0.0, 0.4]]])
    out = aggregate(p, gamma=1.0, smoothing=False)
    assert out.scores.tolist() == [[4.0, 1.0]]
    assert out.overall.tolist() == [2.5]


@pytest.mark.parametrize("gamma", [0, -0.5, 1.5, float("nan"), "x", None])
def test_gamma_outside_unit_interval_is_rejected(gamma):
    with pytest.raises(ValueError, match=r"`gamma` to be a float in the \(0, 1\] range"):
        aggregate(np.ones((1, 2, 5)), gamma=gamma)


def test_bad_distributions_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        aggregate(np.ones((2, 5)))
    with pytest.raises(ValueError, match="5 ratings"):
        aggregate(np.ones((1, 2, 4)))
    with pytest.raises(ValueError, match="positive mass"):
        aggregate(np.zeros((1, 2, 5)))
    with pytest.raises(ValueError, match="non-negative"):
        aggregate(-np.ones((1, 2, 5)))
