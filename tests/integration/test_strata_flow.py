"""A study ranked per semantic area on PostgreSQL and Redis: a real Celery worker closes each ballot,
and every ballot compares items of one area only and keeps each area's own top α (§2.1-2.2)."""

import time

import pytest

from collection.lifecycle import study_start
from collection.models import Comparison
from collection.pools import items_generate, tokens_import
from collection.studies import study_create
from tests.factories import annotators, tokens_csv
from tests.integration.conftest import vote_until_finished_by_the_worker

pytestmark = pytest.mark.integration

BALLOT_WAIT_SECONDS = 60


def test_a_real_worker_runs_a_per_area_study_to_one_ranking_per_area(celery_worker_process):
    study = study_create(
        values={
            "name": "Two areas",
            "slug": "two-areas",
            "ranking_scope": "per_area",
            "ballot_count": 3,
            "keep_fraction": 0.5,
            "appearances": 4,
            "votes_per_annotator_per_ballot": None,
        }
    )
    tokens_import(study=study, data=tokens_csv({"animals": 6, "tools": 5}))  # 15 and 10 items
    items_generate(study=study)
    study_start(study=study)
    study.refresh_from_db()
    vote_until_finished_by_the_worker(study, annotators(study, 6), celery_worker_process["log"])
    area = dict(study.items.values_list("id", "area__name"))
    # animals 15 → 8 → 4, tools 10 → 5 → 3: 30 + 20, 16 + 10, 8 + 6 comparisons.
    assert list(study.ballots.order_by("number").values_list("number", "status", "votes_recorded")) == [
        (1, "closed", 50),
        (2, "closed", 26),
        (3, "closed", 14),
    ]
    pairs = Comparison.objects.filter(ballot__study=study).values_list("left_item", "right_item")
    assert all(area[left] == area[right] for left, right in pairs)
    last = study.ballots.get(number=3)
    in_last = sorted(area[pk] for pk in last.items.values_list("pk", flat=True))
    assert in_last == ["animals"] * 4 + ["tools"] * 3
    assert set(last.area_rescale_slopes) == {"animals", "tools"} and last.rescale_slope is None
    # The lower index wins every comparison: each area's first item tops its area.
    for name in ("animals", "tools"):
        first = study.items.filter(area__name=name).order_by("index").first()
        best = study.items.filter(area__name=name).order_by("final_rank").first()
        assert best == first


def test_a_real_worker_simulates_each_areas_plan(celery_worker_process):
    """ "Simulate this plan" on a per-area study, run by the worker on PostgreSQL: one simulation per
    area, with the seeds of each area, stored as jsonb (whose keys have no order: the areas are a list)."""
    from scoring.models import SimulationRun
    from scoring.services import simulation_request, simulation_run_by_area
    from scoring.simulation import SimulationConfig

    study = study_create(
        values={
            "name": "Two areas to simulate",
            "slug": "two-areas-simulated",
            "ranking_scope": "per_area",
            "ballot_count": 3,
            "keep_fraction": 0.5,
            "appearances": 4,
        }
    )
    tokens_import(study=study, data=tokens_csv({"tools": 5, "animals": 6}))  # 10 and 15 items
    items_generate(study=study)
    run = simulation_request(study=study, repetitions=3)  # committed: the worker gets it at once

    deadline = time.monotonic() + BALLOT_WAIT_SECONDS
    while run.status != SimulationRun.Status.DONE:
        assert run.status != SimulationRun.Status.FAILED, run.error
        assert time.monotonic() < deadline, celery_worker_process["log"].read_text()[-3000:]
        time.sleep(0.2)
        run.refresh_from_db()

    configs = [
        (name, SimulationConfig(item_count=size, ballot_count=3, keep_fraction=0.5, appearances=4))
        for name, size in (("animals", 15), ("tools", 10))
    ]
    expected = simulation_run_by_area(configs=configs, repetitions=3, seed=0)
    assert run.done == 3
    assert "Task scoring.simulation_run[" in celery_worker_process["log"].read_text()
    assert [(area["area"], area["uniform"], area["adaptive"]) for area in run.result["areas"]] == [
        (area["area"], area["uniform"], area["adaptive"]) for area in expected["areas"]
    ]
