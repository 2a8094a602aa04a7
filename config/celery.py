"""The Celery application.

Configuration comes from Django settings (keys prefixed ``CELERY_``). Without a broker URL in
the environment the settings switch Celery to eager mode, so tasks run in-process.
"""

import logging
import os
import threading

from celery import Celery, bootsteps
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)

app = Celery("yardstick")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

BALLOTS_SWEEP_TASK = "scoring.ballots_sweep"


class SweepOnConnect(bootsteps.StartStopStep):
    """Each time the worker's consumer connects to the broker (at start, and again after the broker was
    away), it sends the ballots sweep once: a ballot completed while the broker was down, whose closing
    message was lost, is closed then even where no Celery beat runs."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, consumer):
        try:
            consumer.app.send_task(BALLOTS_SWEEP_TASK)
        except Exception:  # the broker gone again: the next connection sends it (a step must not raise)
            logger.exception("could not send %s after connecting to the broker", BALLOTS_SWEEP_TASK)
        else:
            logger.info("sent %s after connecting to the broker", BALLOTS_SWEEP_TASK)


app.steps["consumer"].add(SweepOnConnect)


def compile_metrics_kernels() -> None:
    """Compile (or load from numba's cache) the metrics kernels, so that no evaluation waits for them."""
    import metrics.kernels  # here, not at the top: web processes import this module and never load numba

    metrics.kernels.compile_all()
    logger.info("metrics kernels ready")


@worker_process_init.connect(dispatch_uid="config.celery.kernels_on_worker_start")
def kernels_on_worker_start(**kwargs) -> threading.Thread:
    """A worker process readies the metrics kernels as it starts, in a thread of its own.

    In the background because Celery gives ``worker_process_init`` a few seconds before it
    declares the process dead, and compiling takes tens of seconds on an empty cache (loading from
    it, about a second). A task that needs a kernel meanwhile waits on numba's compiler lock for
    what is left, never for more than the compilation it would have done itself.
    """
    thread = threading.Thread(target=compile_metrics_kernels, name="metrics-kernels", daemon=True)
    thread.start()
    return thread
