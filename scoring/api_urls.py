"""REST API routes of the scoring app: /api/ … (the live view of a study)."""

from django.urls import path

from scoring import api

app_name = "scoring-api"

urlpatterns = [
    path("studies/<slug:slug>/live/", api.LiveView.as_view(), name="study-live"),
]
