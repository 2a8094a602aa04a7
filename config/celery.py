"""The Celery application.

Configuration comes from Django settings (keys prefixed ``CELERY_``). Without a broker URL in
the environment the settings switch Celery to eager mode, so tasks run in-process.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("yardstick")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
