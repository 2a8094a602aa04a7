"""Staff results pages and exports: /studies/<slug>/ …"""

from django.urls import path

from scoring import views

app_name = "scoring"
urlpatterns = [
    path("<slug:slug>/results/", views.results, name="results"),
    path("<slug:slug>/live/", views.live, name="live"),
    path("<slug:slug>/export/dataset.csv", views.export_dataset_csv, name="export-dataset-csv"),
    path("<slug:slug>/export/dataset.json", views.export_dataset_json, name="export-dataset-json"),
    path("<slug:slug>/export/votes.csv", views.export_votes_csv, name="export-votes-csv"),
    path("<slug:slug>/export/annotators.csv", views.export_annotators_csv, name="export-annotators-csv"),
    path("<slug:slug>/export/checks.csv", views.export_check_answers_csv, name="export-checks-csv"),
    path(
        "<slug:slug>/export/without-excluded.csv",
        views.export_without_excluded_csv,
        name="export-without-excluded-csv",
    ),
]
