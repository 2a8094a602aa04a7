"""The Celery application.

Configuration comes from Django settings (keys prefixed ``CELERY_``). Without a broker URL in
the environment the settings switch Celery to eager mode, so tasks run in-process.
"""

import logging
import os
import threading

from celery import Celery
from celery.signals import worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

logger = logging.getLogger(__name__)

app = Celery("yardstick")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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
