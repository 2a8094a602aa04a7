"""The simulation task runs the same service as the command."""

from scoring.services import simulation_run
from scoring.simulation import SimulationConfig
from scoring.tasks import simulate


def test_the_task_returns_the_services_result():
    parameters = {"item_count": 120, "ballot_count": 3}
    result = simulate.apply(kwargs={"parameters": parameters, "repetitions": 2, "seed": 5}).get()
    expected = simulation_run(config=SimulationConfig(**parameters), repetitions=2, seed=5)
    assert result["uniform"] == expected["uniform"] and result["adaptive"] == expected["adaptive"]
