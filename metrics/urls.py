"""Pages of the metrics app: /models/ … (leaderboards, submissions, instrument cards)."""

from django.urls import path

from metrics import account_views, card_views, judge_views, views

app_name = "metrics"
urlpatterns = [
    path("", views.index, name="index"),
    path("login/", views.login, name="login"),
    path("logout/", views.logout, name="logout"),
    path("join/<str:key>/", account_views.join, name="join"),  # a study's invitation link
    path("signup/", account_views.signup, name="signup"),  # open sign-up: 404 unless MODEL_OWNER_SIGNUP
    path("studies/<slug:slug>/leaderboard/", views.leaderboard, name="leaderboard"),
    path("studies/<slug:slug>/leaderboard.svg", views.leaderboard_svg, name="leaderboard-svg"),
    path("studies/<slug:slug>/submit/", views.submit, name="submit"),
    path("studies/<slug:slug>/items.csv", views.pairs_csv, name="items-csv"),
    path("studies/<slug:slug>/card/", card_views.card_page, name="card"),
    path("studies/<slug:slug>/card.md", card_views.card_markdown, name="card-markdown"),
    path("studies/<slug:slug>/card.json", card_views.card_json, name="card-json"),
    path("submissions/<int:submission_id>/", views.submission, name="submission"),
    path("studies/<slug:slug>/judges/submit/", judge_views.judge_submit, name="judge-submit"),
    path("studies/<slug:slug>/judge-pairs.csv", judge_views.judge_pairs_csv, name="judge-pairs-csv"),
    path(
        "studies/<slug:slug>/judges/leaderboard/", judge_views.judges_leaderboard, name="judges-leaderboard"
    ),
    path("judges/<int:judge_id>/", judge_views.judge, name="judge"),
]
