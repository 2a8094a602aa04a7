"""Annotator pages: /s/<slug>/ (instructions and consent) and /s/<slug>/vote/ (the comparisons)."""

from django.urls import path

from collection import views

app_name = "collection"
urlpatterns = [
    path("<slug:slug>/", views.entry, name="entry"),
    path("<slug:slug>/vote/", views.vote, name="vote"),
]
