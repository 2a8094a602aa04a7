"""Bradley-Terry scores from pairwise votes, plain and worker-aware (noisy), by maximum likelihood.

PURE module: numpy, scipy and the standard library only.

* ``bradley_terry``: the model of Bradley and Terry, "Rank Analysis of Incomplete Block Designs: I. The
  Method of Paired Comparisons" (Biometrika 39, 1952): P(i beats j) = σ(θ_i − θ_j), σ the logistic
  function, fitted on every vote of the study at once. A tie counts as half a win to each side (the
  vote's log-likelihood is ½·log σ(d) + ½·log σ(−d)). A Gaussian prior α·‖θ‖² (choix's ``alpha``: the
  MAP estimate under variance 1/(2α)) keeps an item that won, or lost, all its comparisons finite.
* ``noisy_bradley_terry``: each annotator w is attentive with probability γ_w (reliability) and then
  votes as Bradley-Terry; otherwise they pick the left item with probability π_w (side bias):
  P(left wins | w) = γ_w·σ(θ_l − θ_r) + (1 − γ_w)·π_w. This is crowd-kit's ``NoisyBradleyTerry``
  (skills γ, biases π), fitted, as crowd-kit fits it, by L-BFGS on the marginal likelihood, so that a
  careless or one-sided annotator's votes weigh less without being excluded.

Why our own solver: evalica's Bradley-Terry and choix's ``opt_pairwise`` build dense N × N matrices
(about 1.5 GB of memory at 10,000 items for evalica) and choix loops over the votes in Python; here
every step is a ``numpy.bincount`` over the votes and Newton's system is solved by conjugate
gradients with Hessian-vector products, so memory and time grow with the number of votes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_PRIOR", "NoisyFit", "bradley_terry", "noisy_bradley_terry"]

DEFAULT_PRIOR = 0.01  # α: prior variance 50 on θ, far wider than any θ a study's votes support


def _as_votes(left, right, outcome, weight):
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.float64)
    weight = np.ones(left.size) if weight is None else np.asarray(weight, dtype=np.float64)
    if not (left.shape == right.shape == outcome.shape == weight.shape) or left.ndim != 1:
        raise ValueError("left, right, outcome and weight must be one-dimensional arrays of one length")
    return left, right, outcome, weight


def bradley_terry(
    left,
    right,
    outcome,
    item_count: int,
    *,
    weight=None,
    prior: float = DEFAULT_PRIOR,
    initial=None,
    tolerance: float = 1e-9,
    max_iterations: int = 100,
) -> np.ndarray:
    """Bradley-Terry log-strengths θ (Bradley and Terry 1952), the MAP estimate under α·‖θ‖².

    Minimises  f(θ) = −Σ_v w_v·[o_v·log σ(θ_l − θ_r) + (1 − o_v)·log σ(θ_r − θ_l)] + α·Σ_i θ_i²
    by Newton's method: each step solves H·δ = −∇f by conjugate gradients preconditioned by diag(H)
    (the items' vote counts differ by an order of magnitude in an adaptive study, which leaves plain
    CG, as in scipy's Newton-CG, many times slower), then backtracks until f decreases enough (Armijo).
    The gradient, H's diagonal and the products H·v are ``numpy.bincount`` sums over the votes.

    Parameters
    ----------
    left, right : array_like of int
        Item index of each vote's left and right item.
    outcome : array_like of float
        1 the left item won, 0 the right item won, 0.5 a tie (half a win to each side).
    item_count : int
        N, the number of items.
    weight : array_like of float, optional
        How much each vote counts (a bootstrap multiplicity, an annotator's reliability); default 1.
    prior : float
        α > 0 of the Gaussian prior (choix's ``alpha``); keeps undefeated and winless items finite.
    initial : array_like, optional
        θ to start from (a warm start); default 0.
    tolerance : float
        Stop when every component of ∇f is below this (in votes).
    max_iterations : int
        Newton steps at most.

    Returns
    -------
    numpy.ndarray
        θ_i, higher is stronger; NaN for items with no vote of positive weight. Σθ = 0 over all items at
        the optimum (the likelihood only sees differences; the prior centres them).
    """
    if prior <= 0:
        raise ValueError(f"the prior α must be positive, got {prior}")
    # On first use: scipy stays out of web processes that import the score models (tests/test_startup.py).
    from scipy.sparse.linalg import LinearOperator, cg
    from scipy.special import expit, log_expit

    left, right, outcome, weight = _as_votes(left, right, outcome, weight)
    theta = np.zeros(item_count) if initial is None else np.nan_to_num(np.asarray(initial, dtype=np.float64))
    theta = theta.copy()

    def objective(theta):
        difference = theta[left] - theta[right]
        value = -(weight * (outcome * log_expit(difference) + (1.0 - outcome) * log_expit(-difference))).sum()
        return value + prior * theta @ theta

    value = objective(theta)
    for _ in range(max_iterations):  # Newton steps, each vectorised over the votes
        p = expit(theta[left] - theta[right])
        residual = weight * (p - outcome)
        gradient = np.bincount(left, residual, item_count) - np.bincount(right, residual, item_count)
        gradient += 2.0 * prior * theta
        if np.abs(gradient).max() <= tolerance:
            break
        curvature = weight * p * (1.0 - p)
        diagonal = (
            np.bincount(left, curvature, item_count) + np.bincount(right, curvature, item_count) + 2.0 * prior
        )

        def product(direction, curvature=curvature):
            flow = curvature * (direction[left] - direction[right])
            return (
                np.bincount(left, flow, item_count)
                - np.bincount(right, flow, item_count)
                + 2.0 * prior * direction
            )

        hessian = LinearOperator((item_count, item_count), matvec=product, dtype=np.float64)
        preconditioner = LinearOperator((item_count, item_count), matvec=lambda v, d=diagonal: v / d)
        forcing = min(0.5, float(np.sqrt(np.linalg.norm(gradient))))  # inexact Newton: superlinear
        step, _ = cg(hessian, -gradient, rtol=forcing * 1e-2, M=preconditioner, maxiter=200)
        slope = float(gradient @ step)
        length = 1.0
        while True:  # Armijo backtracking: f convex, so a short enough step always decreases it
            candidate = theta + length * step
            new_value = objective(candidate)
            if new_value <= value + 1e-4 * length * slope or length < 1e-8:
                break
            length /= 2
        theta, value = candidate, new_value
    seen = np.bincount(left, weight, item_count) + np.bincount(right, weight, item_count) > 0
    return np.where(seen, theta, np.nan)


@dataclass(frozen=True)
class NoisyFit:
    """The worker-aware fit: item scores θ, each annotator's reliability γ and left bias π.

    ``reliability`` and ``left_bias`` are NaN for annotator codes without a vote; ``iterations`` counts
    L-BFGS steps.
    """

    score: np.ndarray
    reliability: np.ndarray
    left_bias: np.ndarray
    iterations: int


def noisy_bradley_terry(
    left,
    right,
    outcome,
    annotator,
    item_count: int,
    *,
    weight=None,
    prior: float = DEFAULT_PRIOR,
    initial: NoisyFit | None = None,
    tolerance: float = 1e-9,
    max_iterations: int = 2000,
) -> NoisyFit:
    """Noisy Bradley-Terry (crowd-kit's ``NoisyBradleyTerry`` model), the MAP estimate by L-BFGS.

    P(left wins | w) = γ_w·σ(θ_l − θ_r) + (1 − γ_w)·π_w, a tie half a left and half a right win.
    Minimises, over θ, a_w = logit γ_w and b_w = logit π_w (as crowd-kit does, with L-BFGS),

        −Σ_v w_v·log[γ_w·σ(±(θ_l − θ_r)) + (1 − γ_w)·π_w^o·(1 − π_w)^(1−o)] + α·‖θ‖²
        − Σ_w [log γ_w + log(1 − γ_w) + log π_w + log(1 − π_w)],

    the last sum the Beta(2, 2) priors that keep γ and π inside (0, 1) (crowd-kit's own penalty
    differs: it pulls the scores towards a shared centre, and its fit starts at random, so the two
    agree in ranking, not in value). The gradient is vectorised over the votes.

    Parameters
    ----------
    left, right, outcome, weight, prior
        As for ``bradley_terry``.
    annotator : array_like of int
        Annotator code 0 … A-1 of each vote.
    item_count : int
        N, the number of items.
    initial : NoisyFit, optional
        A fit to start from (a warm start); default θ from plain Bradley-Terry, γ = 0.9, π = 0.5.
    tolerance, max_iterations
        L-BFGS-B's ``ftol`` and ``maxiter``.

    Returns
    -------
    NoisyFit
        ``score`` θ (NaN: no vote), ``reliability`` γ, ``left_bias`` π, ``iterations``.
    """
    from scipy.optimize import minimize  # on first use, as in bradley_terry
    from scipy.special import expit

    left, right, outcome, weight = _as_votes(left, right, outcome, weight)
    annotator = np.asarray(annotator, dtype=np.int64)
    if annotator.shape != left.shape:
        raise ValueError("annotator must give one code per vote")
    annotator_count = int(annotator.max()) + 1 if annotator.size else 0
    # A tie becomes half a left win and half a right win, so that every vote's outcome is 0 or 1.
    tied = outcome == 0.5
    left = np.concatenate([left, left[tied]])
    right = np.concatenate([right, right[tied]])
    annotator = np.concatenate([annotator, annotator[tied]])
    weight = np.concatenate([np.where(tied, weight / 2, weight), weight[tied] / 2])
    outcome = np.concatenate([np.where(tied, 1.0, outcome), np.zeros(int(tied.sum()))])
    side = 2.0 * outcome - 1.0
    n, a = item_count, annotator_count
    if initial is None:
        start = np.concatenate(
            [
                np.nan_to_num(bradley_terry(left, right, outcome, n, weight=weight, prior=prior)),
                np.full(a, np.log(9.0)),  # γ = 0.9
                np.zeros(a),  # π = 0.5
            ]
        )
    else:
        start = np.concatenate(
            [
                np.nan_to_num(initial.score),
                _logit(np.nan_to_num(initial.reliability, nan=0.9)),
                _logit(np.nan_to_num(initial.left_bias, nan=0.5)),
            ]
        )

    def objective(x):
        theta, reliability, left_bias = x[:n], expit(x[n : n + a]), expit(x[n + a :])
        gamma = reliability[annotator]
        bias = left_bias[annotator]
        p = expit(side * (theta[left] - theta[right]))
        pick = np.where(side > 0, bias, 1.0 - bias)
        likelihood = gamma * p + (1.0 - gamma) * pick
        value = -(weight * np.log(likelihood)).sum() + prior * theta @ theta
        value -= (_log_both(x[n : n + a]) + _log_both(x[n + a :])).sum()
        share = weight / likelihood
        flow = -share * gamma * p * (1.0 - p) * side
        gradient = np.empty_like(x)
        gradient[:n] = np.bincount(left, flow, n) - np.bincount(right, flow, n) + 2.0 * prior * theta
        gradient[n : n + a] = np.bincount(annotator, -share * (p - pick) * gamma * (1.0 - gamma), a) + (
            2.0 * reliability - 1.0
        )
        gradient[n + a :] = np.bincount(annotator, -share * (1.0 - gamma) * side * bias * (1.0 - bias), a) + (
            2.0 * left_bias - 1.0
        )
        return value, gradient

    fit = minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        options={"ftol": tolerance, "gtol": 1e-8, "maxiter": max_iterations, "maxcor": 10},
    )
    seen = np.bincount(left, weight, n) + np.bincount(right, weight, n) > 0
    voted = np.bincount(annotator, weight, a) > 0
    return NoisyFit(
        score=np.where(seen, fit.x[:n], np.nan),
        reliability=np.where(voted, expit(fit.x[n : n + a]), np.nan),
        left_bias=np.where(voted, expit(fit.x[n + a :]), np.nan),
        iterations=int(fit.nit),
    )


def _logit(p):
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-12, 1.0 - 1e-12)
    return np.log(p) - np.log1p(-p)


def _log_both(x):
    """log σ(x) + log(1 − σ(x)), the log of a Beta(2, 2) density at σ(x) up to a constant."""
    from scipy.special import log_expit

    return log_expit(x) + log_expit(-x)
