"""A realistic state of the platform for whole-API tests: a finished study with models submitted, a running
study with votes, a draft; staff, two model owners and an annotator.

Built through the services (``tests/factories.py``), so every operation of the API reaches its real
branches: results and leaderboards exist, a ballot is open, pools can still change. The fuzzing test, the
permission matrix and ``tests/reliability/fuzz.py`` (against a live server) all start from this world.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token as ApiToken

from collection.models import Study
from metrics import services as metrics_services
from metrics.judges import judge_pairs
from metrics.models import Submission
from tests.factories import annotators, disagreeing_crowd, make_study, vote_until

FINISHED, RUNNING, DRAFT = "finished", "running", "draft"


@dataclass
class World:
    staff_token: str
    owner_a_token: str
    owner_b_token: str
    slugs: tuple[str, ...]  # finished, running, draft
    submission_a: int  # owner A's, evaluated
    submission_b: int  # owner B's, evaluated
    judge_a: int  # owner A's judge, evaluated

    @property
    def submission_ids(self) -> tuple[int, int]:
        return self.submission_a, self.submission_b


def _user_with_token(username: str, **fields) -> str:
    user = get_user_model().objects.create_user(username, password=f"{username}-password", **fields)
    return ApiToken.objects.create(user=user).key


def _submit(study: Study, owner_token: str, model_name: str, seed: int) -> int:
    owner = ApiToken.objects.get(key=owner_token).user
    rng = np.random.default_rng(seed)
    truth = dict(study.items.values_list("pk", "final_score"))
    rows = [{"item": pk, "score": float(score + rng.normal(0, 0.1))} for pk, score in truth.items()]
    submission = metrics_services.submission_create(
        study=study, owner=owner, model_name=model_name, data=rows, source_format="json"
    )
    assert submission.status == Submission.Status.DONE, submission.error
    return submission.pk


def _judge(study: Study, owner_token: str, judge_name: str) -> int:
    """A judge that decides every pair for the item with the higher final score (left on a tie)."""
    owner = ApiToken.objects.get(key=owner_token).user
    pairs = judge_pairs(study=study)
    final = dict(study.items.values_list("pk", "final_score"))
    rows = [
        {"pair": number, "decision": "left" if final[left] >= final[right] else "right"}
        for number, left, right in zip(
            range(1, pairs.count + 1), pairs.left_id.tolist(), pairs.right_id.tolist(), strict=True
        )
    ]
    judge = metrics_services.judge_create(
        study=study, owner=owner, judge_name=judge_name, data=rows, source_format="json"
    )
    assert judge.status == Submission.Status.DONE, judge.error
    return judge.pk


def build_world() -> World:
    """The world; Celery must run tasks in place (eager) while it is built."""
    staff_token = _user_with_token("staff", is_staff=True, is_superuser=True)  # the admin's researcher
    owner_a_token = _user_with_token("owner-a")
    owner_b_token = _user_with_token("owner-b")

    finished = make_study(tokens=8, ballot_count=2, appearances=8, seed=4, allow_ties=True)
    vote_until(finished, voters=annotators(finished, 6), choose=disagreeing_crowd(finished, seed=1))
    finished.refresh_from_db()
    assert finished.status == Study.Status.FINISHED
    submission_a = _submit(finished, owner_a_token, "model-a", seed=2)
    submission_b = _submit(finished, owner_b_token, "model-b", seed=3)
    judge_a = _judge(finished, owner_a_token, "judge-a")

    running = make_study(tokens=6, ballot_count=3, appearances=4, seed=5)
    vote_until(
        running,
        voters=annotators(running, 3, prefix="r"),
        choose=disagreeing_crowd(running, seed=6),
        max_votes=10,
    )

    draft = make_study(tokens=6, start=False)

    for study, slug in ((finished, FINISHED), (running, RUNNING), (draft, DRAFT)):
        Study.objects.filter(pk=study.pk).update(slug=slug)
    return World(
        staff_token=staff_token,
        owner_a_token=owner_a_token,
        owner_b_token=owner_b_token,
        slugs=(FINISHED, RUNNING, DRAFT),
        submission_a=submission_a,
        submission_b=submission_b,
        judge_a=judge_a,
    )
