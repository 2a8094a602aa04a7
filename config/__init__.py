"""Project configuration: settings from the environment, the Celery app, URLs, WSGI/ASGI."""

from .celery import app as celery_app

__all__ = ("celery_app",)
