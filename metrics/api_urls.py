"""REST API routes of the metrics app: /api/ … (model owners' submissions, leaderboards)."""

from django.urls import path

from metrics import api, hub_views

app_name = "metrics-api"

urlpatterns = [
    path("studies/<slug:slug>/pairs/", api.PairsView.as_view(), name="study-pairs"),
    path("studies/<slug:slug>/submissions/", api.SubmissionCreateView.as_view(), name="study-submissions"),
    path("studies/<slug:slug>/seals/", api.SealView.as_view(), name="study-seals"),
    path("studies/<slug:slug>/leaderboard/", api.LeaderboardView.as_view(), name="study-leaderboard"),
    path("studies/<slug:slug>/annotators/", api.AnnotatorsView.as_view(), name="study-annotators"),
    path("studies/<slug:slug>/card/", api.CardView.as_view(), name="study-card"),
    path("studies/<slug:slug>/hub-dataset/", hub_views.HubDatasetView.as_view(), name="study-hub-dataset"),
    path("studies/<slug:slug>/judge-pairs/", api.JudgePairsView.as_view(), name="study-judge-pairs"),
    path("studies/<slug:slug>/judges/", api.JudgeCreateView.as_view(), name="study-judges"),
    path(
        "studies/<slug:slug>/judges/leaderboard/",
        api.JudgeLeaderboardView.as_view(),
        name="study-judges-leaderboard",
    ),
    path("judges/", api.JudgeListView.as_view(), name="judges"),
    path("judges/<int:judge_id>/", api.JudgeDetailView.as_view(), name="judge-detail"),
    path("judges/<int:judge_id>/evaluation/", api.JudgeEvaluationView.as_view(), name="judge-evaluation"),
    path("submissions/", api.SubmissionListView.as_view(), name="submissions"),
    path("submissions/<int:submission_id>/", api.SubmissionDetailView.as_view(), name="submission-detail"),
    path(
        "submissions/<int:submission_id>/evaluation/",
        api.SubmissionEvaluationView.as_view(),
        name="submission-evaluation",
    ),
]
