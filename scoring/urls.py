"""Staff results pages and exports: /studies/<slug>/ …"""

from django.urls import path  # noqa: F401

app_name = "scoring"
urlpatterns: list = []
