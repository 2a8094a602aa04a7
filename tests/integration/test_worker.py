"""A task sent through Redis runs in a separate Celery worker process and returns its result."""

import pytest

from scoring.services import simulation_run
from scoring.simulation import SimulationConfig
from scoring.tasks import simulate

pytestmark = pytest.mark.integration


def test_a_real_worker_runs_the_simulation_task(celery_worker_process):
    parameters = {"item_count": 150, "ballot_count": 3}
    async_result = simulate.delay(parameters, repetitions=3, seed=11)
    result = async_result.get(timeout=120)
    expected = simulation_run(config=SimulationConfig(**parameters), repetitions=3, seed=11)
    assert result["uniform"] == expected["uniform"] and result["adaptive"] == expected["adaptive"]
    log = celery_worker_process["log"].read_text()
    assert f"Task scoring.simulate[{async_result.id}] succeeded" in log
