"""The final ranking of a finished study, for the REST API."""

from __future__ import annotations

from collection.models import Ballot, Study
from common.errors import StudyStateError
from scoring.models import ItemScore


def study_results(*, study: Study) -> list[dict]:
    """The items by final rank with their tokens, area, final score ȳ, last ballot and x(k) per ballot.

    ``win_ratios[k - 1]`` is x(k) of Eq. 1 for ballots 1 … last_ballot, None where the item got no vote.
    Refused (409) while the study is not finished: ranks exist only once its last ballot has closed.
    """
    if study.status != Study.Status.FINISHED:
        open_ballot = study.ballots.filter(status=Ballot.Status.OPEN).values_list("number", flat=True).first()
        where = f"; ballot {open_ballot} of {study.ballot_count} is open" if open_ballot else ""
        raise StudyStateError(
            f"the study is {study.status}{where}: the final ranking exists once its last ballot has closed"
        )
    win_ratios: dict[int, dict[int, float | None]] = {}
    for item_id, number, win_ratio in ItemScore.objects.filter(ballot__study=study).values_list(
        "item_id", "ballot__number", "win_ratio"
    ):
        win_ratios.setdefault(item_id, {})[number] = win_ratio
    items = study.items.select_related("area", "token_a", "token_b").order_by("final_rank", "index")
    return [
        {
            "rank": item.final_rank,
            "item": item.pk,
            "index": item.index,
            "tokens": [item.token_a.text, item.token_b.text],
            "area": item.area.name,
            "final_score": item.final_score,
            "last_ballot": item.last_ballot,
            "win_ratios": [
                win_ratios.get(item.pk, {}).get(number) for number in range(1, (item.last_ballot or 0) + 1)
            ],
        }
        for item in items
    ]
