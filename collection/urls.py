"""Annotator pages: /s/<slug>/ (instructions and consent), /s/<slug>/vote/ (the comparisons), and the
forms that leave them: /s/<slug>/finish/ (Finish) and /s/<slug>/release/ (the lease given back)."""

from django.urls import path

from collection import views

app_name = "collection"
urlpatterns = [
    path("catalog/<str:language>.js", views.catalog, name="catalog"),  # the pages' script messages
    path("<slug:slug>/", views.entry, name="entry"),
    path("<slug:slug>/vote/", views.vote, name="vote"),
    path("<slug:slug>/finish/", views.finish, name="finish"),
    path("<slug:slug>/release/", views.release, name="release"),
]
