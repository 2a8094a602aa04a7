"""The weight offset n0 is bounded where the weights f(n) = 1/(n + n0)² of Eq. 9 are computed faithfully:
from -0.9 (the first rank then takes R(-0.9) = 98.6% of the weight; nearer -1 its share swamps the
others' in 64-bit floats, and τ_w's normaliser 1 - Σw² rounds to 0) to 1,000,000. Every n0 in that range,
with any score vectors (constant, tied, tiny, huge), gives a figure in [-1, 1] or an undefined one with its
reason; no n0 at all divides by zero in the compiled kernels."""

from __future__ import annotations

import json
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from common.numbers import finite_json
from metrics.correlation import (
    MIN_WEIGHT_OFFSET,
    first_rank_weight,
    ranks_from_scores,
    weighted_kendall,
    weighted_kendall_rows,
    weighted_spearman,
    weighted_spearman_rows,
)
from metrics.evaluation import COEFFICIENTS, evaluate
from metrics.leaderboard import LEADERBOARD_WEIGHT_OFFSETS
from metrics.metrology import chance_level
from metrics.models import Evaluation
from metrics.services import MAX_WEIGHT_OFFSET
from tests.metrics.test_api import final_scores, json_rows, owner_client, submit_json
from tests.metrics.test_pages import logged_in, page

MINIMUM_MESSAGE = (
    "n0 must be at least -0.9: the weights f(n) = 1/(n + n0)² of Eq. 9 exist for n0 > -1, but below -0.9 the "
    "first rank takes more than R(-0.9) = 0.986 of the weight and 64-bit floats lose the other ranks' share"
)


def test_the_bound_is_where_the_first_rank_takes_98_6_percent_of_the_weight():
    assert MIN_WEIGHT_OFFSET == -0.9
    assert first_rank_weight(-0.9) == pytest.approx(0.98587, abs=1e-5)
    assert all(MIN_WEIGHT_OFFSET <= offset <= MAX_WEIGHT_OFFSET for offset in LEADERBOARD_WEIGHT_OFFSETS)
    with pytest.raises(ValueError, match=r"n0 must be at least -0\.9"):
        weighted_kendall([1, 2, 3], [1, 2, 3], -0.95)


@pytest.mark.django_db
@pytest.mark.parametrize("n0", ["-0.9999999999999999", "-0.95", "-1", "-1e308"])
def test_an_n0_below_the_bound_is_refused_with_400_and_why(study, django_user_model, n0):
    owner = owner_client(django_user_model)
    url = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()["url"]

    response = owner.get(url + "evaluation/", {"n0": n0})

    assert (response.status_code, response.json()["errors"]) == (400, [f"n0: {MINIMUM_MESSAGE}"])
    assert Evaluation.objects.count() == 1  # only the one at the defaults


@pytest.mark.django_db
def test_the_lowest_n0_gives_figures_in_range(study, django_user_model):
    owner = owner_client(django_user_model)
    url = submit_json(owner, study, "truth", json_rows(final_scores(study))).json()["url"]

    body = owner.get(url + "evaluation/", {"n0": "-0.9"}).json()

    assert body["weight_offset"] == -0.9
    assert body["tau_w"]["value"] == pytest.approx(1.0) and body["rho_w"]["value"] == pytest.approx(1.0)
    assert body["first_rank_weight"] == pytest.approx(first_rank_weight(-0.9))


@pytest.mark.django_db
def test_the_evaluation_page_says_the_bound(study, django_user_model):
    client = logged_in(django_user_model)
    rows = "item,score\n" + "".join(f"{pk},{score}\n" for pk, score in final_scores(study).items())
    upload = SimpleUploadedFile("scores.csv", rows.encode(), content_type="text/csv")
    submitted = client.post(f"/models/studies/{study.slug}/submit/", {"model_name": "m", "file": upload})

    response = client.get(submitted["Location"], {"n0": "-0.9999999999999999", "k": "3"})

    assert response.status_code == 200
    assert f"n0: {MINIMUM_MESSAGE}" in page(response).text["settings-problem"]


@pytest.mark.django_db
def test_the_api_schema_states_the_bounds_of_n0():
    schema = Client().get("/api/schema/", {"format": "json"}).json()
    parameters = schema["paths"]["/api/submissions/{submission_id}/evaluation/"]["get"]["parameters"]
    (n0,) = [parameter for parameter in parameters if parameter["name"] == "n0"]

    assert (n0["schema"]["minimum"], n0["schema"]["maximum"]) == (-0.9, 1e6)
    assert "exclusiveMinimum" not in n0["schema"]
    assert "-0.9" in n0["description"]


# --- every n0 in range, every score vector -----------------------------------------------------------

OFFSETS = st.floats(min_value=MIN_WEIGHT_OFFSET, max_value=MAX_WEIGHT_OFFSET, allow_nan=False) | st.sampled_from(
    [MIN_WEIGHT_OFFSET, math.nextafter(MIN_WEIGHT_OFFSET, 0), 0.0, 2.0, MAX_WEIGHT_OFFSET]
)
MAGNITUDES = st.sampled_from([1.0, 1e-300, 5e-324, 1e300, 5e307])  # × 3 stays finite
SCORES = st.lists(
    st.integers(min_value=-3, max_value=3) | st.floats(min_value=-1.0, max_value=1.0, allow_nan=False),
    min_size=2,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(n0=OFFSETS, model=SCORES, human=SCORES, magnitude=MAGNITUDES, data=st.data())
def test_every_n0_in_range_gives_each_figure_in_range_or_undefined_with_its_reason(n0, model, human, magnitude, data):
    size = min(len(model), len(human))
    model_scores = np.asarray(model[:size], dtype=np.float64) * magnitude
    human_scores = np.asarray(human[:size], dtype=np.float64)
    replicates = human_scores[None, :] + np.random.default_rng(0).normal(0, 0.1, (5, size))
    top_k = data.draw(st.integers(min_value=1, max_value=size))
    chance = chance_level(size, np.random.default_rng(1), weight_offset=n0, draws=20)

    result = evaluate(
        model_scores, human_scores, weight_offset=n0, top_k=top_k, human_replicates=replicates, chance=chance
    )

    for name in COEFFICIENTS:
        entry = result[name]
        if entry["value"] is None:
            assert entry["undefined"].split(" is undefined: ")[1]
            assert entry["p_value"] is None and entry["interval"] is None
        else:
            assert -1.0 <= entry["value"] <= 1.0 and "undefined" not in entry
            assert 0.0 < entry["p_value"] <= 1.0
        assert all(-1.0 <= value <= 1.0 for value in chance[name]["draws"] if not math.isnan(value))
    assert 0.0 < result["first_rank_weight"] <= 1.0
    json.dumps(finite_json(result), allow_nan=False)  # what the database stores


@settings(max_examples=150, deadline=None)
@given(
    n0=st.floats(min_value=-1.0, max_value=MIN_WEIGHT_OFFSET, exclude_min=True),
    length=st.integers(min_value=2, max_value=300),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_no_n0_above_minus_one_divides_by_zero_in_the_compiled_kernels(n0, length, seed):
    rng = np.random.default_rng(seed)
    # The worst case for the weights: the same item first in both rankings, and ties in one of them.
    a = ranks_from_scores(np.r_[10.0, rng.integers(0, 3, length - 1)])
    b = np.vstack([ranks_from_scores(np.r_[10.0, rng.random(length - 1)]) for _ in range(3)])

    import metrics.kernels as kernels

    order = np.argsort(a[None, :], axis=1, kind="stable")
    tau = kernels.kendall_gamma_rows(a[None, :], order, b, n0)
    rho = kernels.spearman_weighted_rows(a[None, :], b, n0)

    for values in (tau, rho):
        assert np.all(np.isnan(values) | ((values >= -1.0) & (values <= 1.0)))


def exact_worst_case(n: int, n0: str) -> tuple[float, float]:
    """ρ_w and τ_w, to 50 digits, of the rankings whose weights are most lopsided: one ranks every item
    tied but the last, the other ranks them 1 … n, the same item last in both. In closed form (Eq. 7-9):
    only the pairs with the last item count in τ_w, so τ_w = sqrt(2·w_l·(1 - w_l) / (1 - Σ w_i²))."""
    with localcontext() as context:
        context.prec = 50
        offset = Decimal(n0)
        tied = Decimal(n) / 2  # the average rank of 1 … n - 1
        f = [1 / (tied + offset) ** 2 + 1 / (Decimal(rank) + offset) ** 2 for rank in range(1, n)]
        f.append(2 / (Decimal(n) + offset) ** 2)
        total = sum(f)
        w = [value / total for value in f]
        a = [tied] * (n - 1) + [Decimal(n)]
        b = [Decimal(rank) for rank in range(1, n + 1)]
        mean_a = sum(wi * ai for wi, ai in zip(w, a, strict=True))
        mean_b = sum(wi * bi for wi, bi in zip(w, b, strict=True))
        covariance = sum(wi * (ai - mean_a) * (bi - mean_b) for wi, ai, bi in zip(w, a, b, strict=True))
        var_a = sum(wi * (ai - mean_a) ** 2 for wi, ai in zip(w, a, strict=True))
        var_b = sum(wi * (bi - mean_b) ** 2 for wi, bi in zip(w, b, strict=True))
        rho_w = covariance / (var_a * var_b).sqrt()
        tau_w = (2 * w[-1] * (1 - w[-1]) / (1 - sum(wi * wi for wi in w))).sqrt()
    return float(rho_w), float(tau_w)


def test_at_the_bound_the_coefficients_are_exact_to_1e_8_at_the_largest_study_size():
    n = 20_000  # collection.limits.MAX_ITEMS
    a = ranks_from_scores(np.r_[np.zeros(n - 1), -1.0])
    b = np.arange(1.0, n + 1.0)
    rho_w, tau_w = exact_worst_case(n, "-0.9")

    assert weighted_spearman(a, b, -0.9) == pytest.approx(rho_w, abs=1e-8)
    assert weighted_spearman_rows(a, b[None, :], -0.9)[0] == pytest.approx(rho_w, abs=1e-8)
    assert weighted_kendall(a, b, -0.9) == pytest.approx(tau_w, abs=1e-8)
    assert weighted_kendall_rows(a, b[None, :], -0.9)[0] == pytest.approx(tau_w, abs=1e-8)
