"""A Celery worker process readies the metrics kernels as it starts; a web process never loads numba."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter: what importing the Celery app loads, then what a worker process's start
# signal does. The kernels' dispatchers start without signatures in a new process, so the counts
# show what the signal's handler compiled (or loaded from numba's cache).
WORKER_START = """
import sys
import threading

import django

django.setup()
from celery.signals import worker_process_init

import config.celery

print("numba-before", "numba" in sys.modules)
responses = worker_process_init.send(sender=None)
threads = [thread for receiver, thread in responses if receiver is config.celery.kernels_on_worker_start]
print("handlers", len(threads))
threads[0].join()
import metrics.kernels as kernels

names = [name for name in kernels.__all__ if name != "compile_all"]
print("uncompiled", [name for name in names if not getattr(kernels, name).signatures])
"""


def test_a_worker_process_start_compiles_every_kernel_and_importing_the_app_does_not_load_numba():
    result = subprocess.run(
        [sys.executable, "-c", WORKER_START], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == ["numba-before False", "handlers 1", "uncompiled []"]


def test_the_web_application_does_not_load_numba():
    # gunicorn's workers import the WSGI application (and with it the Celery app): numba and LLVM
    # would add about 50 MB to each.
    code = "import sys, config.wsgi; print('numba' in sys.modules, 'metrics.kernels' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]
