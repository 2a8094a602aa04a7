"""REST API routes: /api/ …"""

from django.urls import path
from rest_framework.routers import SimpleRouter

from collection.api import ComparisonNextView, StudyViewSet, VoteView

app_name = "api"

router = SimpleRouter()
router.register("studies", StudyViewSet, basename="study")

urlpatterns = [
    path("studies/<slug:slug>/next/", ComparisonNextView.as_view(), name="study-next"),
    path("votes/", VoteView.as_view(), name="votes"),
    *router.urls,
]
