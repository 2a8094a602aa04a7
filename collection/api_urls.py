"""REST API routes: /api/ …"""

from django.urls import path  # noqa: F401

app_name = "api"
urlpatterns: list = []
