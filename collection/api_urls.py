"""REST API routes: /api/ …"""

from django.urls import path
from rest_framework.routers import SimpleRouter

from collection.api import ComparisonNextView, FinishView, StudyViewSet, VoteView

app_name = "api"

router = SimpleRouter()
router.register("studies", StudyViewSet, basename="study")

urlpatterns = [
    path("studies/<slug:slug>/next/", ComparisonNextView.as_view(), name="study-next"),
    path("studies/<slug:slug>/finish/", FinishView.as_view(), name="study-finish"),
    path("votes/", VoteView.as_view(), name="votes"),
    *router.urls,
]
