"""Annotator pages: /s/<slug>/ …"""

from django.urls import path  # noqa: F401

app_name = "collection"
urlpatterns: list = []
