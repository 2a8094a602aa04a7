"""The instrument card of a study (Welty et al., "Metrology for AI", §5): its computation and its cache.

``instrument_card`` returns the card as a dict, computed from the study's rows and the pure
``metrics.metrology`` and cached in a ``StudyFigure`` until the study, its replications or its changes
move on. ``metrics.card`` turns the dict into a document, ``metrics.card_render`` into Markdown and the
page's figures. A study that finishes has its card, and its replications' cards, computed in a task
(``card_refresh_on_finish``), so that the first visitor does not wait for it.
"""

from __future__ import annotations

import logging
import math

import krippendorff
import numpy as np
from django.core.cache import cache
from django.db.models import Count, Max

from collection import arrays
from collection.models import CheckAnswer, Study
from collection.parts import has_hidden_part, hidden_mask
from collection.studies import STUDY_SETTINGS, study_plan
from common.numbers import finite_or_none
from common.tasks import enqueue_on_commit
from metrics.figures import (
    CHANCE_COEFFICIENTS,
    DEFAULT_WEIGHT_OFFSET,
    cached,
    chance_for,
    score_model_comparison,
    stored_figure,
    study_replicates,
)
from metrics.metrology import (
    pair_value_counts,
    precision_summary,
    reproducibility,
    resolution,
    split_half_reliability,
)
from metrics.selectors import current_scores, finished_replications, study_votes
from scoring.exclusion import scores_without_excluded
from scoring.fragility import VoteTable, removals_to_change
from scoring.score_models import SCORE_MODELS
from scoring.selectors import study_check_tally, study_crowd
from scoring.side_by_side import model_description, model_label, study_score_model

# 3: "changes", the settings changed after the start. 4: precision, reproducibility and chance level
# from the study's one set of bootstrap replicates and chance level, shared with the leaderboard.
# 5: the chance level of plain ρ and τ beside ρ_w and τ_w. 6: the ranking scope and figures per area;
# "fragility", the fewest votes found whose removal changes the top item and the top-K set (issue 11).
# 7: "split", the hidden test part of a study that keeps one; the per-item precision rows of such a
# study list its development part only. 8: "crowd", the votes of people and of simulated annotators
# apart, with the α of the people's votes alone; "checks", the check rate and the answers to the checks.
# 9: "score_model" in the procedure, the model that made the ranking; "score_models", every score model's
# ranking against the reference and each other (metrics.figures.score_model_comparison).
CARD_VERSION = 9
# Removals the fragility search tries per contested pair before it gives up (scoring/fragility.py).
FRAGILITY_MAX_STEPS = 200
SPLIT_HALF_STREAM = 12  # the study's seed drawn with this stream for the split halves
# The API and the card page compute a card in the request up to this many items (about 4 s); a larger
# one is computed in the background and they answer 202 meanwhile (the page with its progress).
CARD_SYNC_ITEMS = 1000
# The card's computation reports its steps done of CARD_STEPS in the cache while it runs (in a worker, or
# after the response on the embedded default), so that the API's 202 can say how far it has gone.
CARD_PROGRESS_KEY = "card-progress:{}"
CARD_STEPS = 8
# A request asks for the card's computation at most once while this mark lasts: card_wait_seconds after
# the ask, and CARD_STEP_SECONDS after each step a running computation reports (one that has not
# reported for that long is taken as lost, and the next request asks again).
CARD_REQUESTED_KEY = "card-requested:{}"
CARD_STEP_SECONDS = 120
DRAFT_MESSAGE = (
    "Study {slug!r} is a draft: nothing has been measured yet. Its instrument card exists once the study has "
    "started; it fills in as ballots close."
)

logger = logging.getLogger(__name__)


def instrument_card(*, study: Study) -> dict:
    """The metrology datasheet of a study (Welty §5), cached until the study changes."""
    return cached(
        study,
        "card",
        {"version": CARD_VERSION},
        lambda: _compute_card(study),
        depends_on=_card_depends_on(study),
    )


def instrument_card_or_request(*, study: Study) -> dict | None:
    """The card for the REST API and the card page: stored and current, or computed now for a study of
    at most ``CARD_SYNC_ITEMS`` items; otherwise None, once its computation has been
    asked for in the background (the task ``metrics.instrument_card``, at most once per study every
    ``card_wait_seconds``, and never while a computation reports its steps, so that clients polling for
    it do not queue one computation each)."""
    card = stored_figure(study, "card", {"version": CARD_VERSION}, depends_on=_card_depends_on(study))
    if card is not None:
        return card
    item_count = study.items.count()
    if item_count <= CARD_SYNC_ITEMS:
        return instrument_card(study=study)
    try:
        first_ask = cache.add(
            CARD_REQUESTED_KEY.format(study.pk), True, timeout=card_wait_seconds(item_count)
        )
    except Exception:  # the cache (Redis) is away: ask anyway; the task is idempotent
        logger.warning("cache unavailable; asking for the card of study %s without deduplication", study.pk)
        first_ask = True
    if first_ask:
        # Asked for, not started: no figure of an earlier computation.
        _card_progress_report(study, 0, running=False)
        enqueue_on_commit(
            "metrics.instrument_card",
            study.pk,
            recovered_by="the next request for the card",
            after_response=True,
        )
    return None


def card_steps_done(*, study: Study) -> int | None:
    """The steps done (0 to ``CARD_STEPS``) of the card's computation last reported; None when none has
    started or the cache does not answer."""
    try:
        done = cache.get(CARD_PROGRESS_KEY.format(study.pk))
    except Exception:  # the cache (Redis) is away: no progress to tell
        return None
    return None if done is None else min(CARD_STEPS, int(done))


def card_progress(*, study: Study) -> float | None:
    """The share done of the card's computation last reported (0 to 1); None when none has started."""
    done = card_steps_done(study=study)
    return None if done is None else done / CARD_STEPS


def _card_progress_report(study: Study, done: int, *, running: bool = True) -> None:
    try:
        cache.set(CARD_PROGRESS_KEY.format(study.pk), done, 3600)
        if not running:
            return
        if done < CARD_STEPS:  # running: no request asks for another computation meanwhile
            cache.set(CARD_REQUESTED_KEY.format(study.pk), True, CARD_STEP_SECONDS)
        else:  # over: the next request finds the card, or asks again if the study moved on meanwhile
            cache.delete(CARD_REQUESTED_KEY.format(study.pk))
    except Exception:  # progress is a courtesy; the card is computed without it
        logger.warning("progress of the card of study %s not stored: the cache does not answer", study.pk)


def card_wait_seconds(item_count: int) -> int:
    """How long a card of ``item_count`` items takes to compute, rounded up: about 4 s per 1000 items (3 s
    for the metrology, 1 s to fit and compare the score models)."""
    return max(2, math.ceil(4 * item_count / 1000))


def card_json_data(value):
    """A JSON-ready copy of the card (the ``.json`` download and the API): numpy scalars and arrays as
    Python values, NaN and infinities as None."""
    if isinstance(value, dict):
        return {str(key): card_json_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [card_json_data(item) for item in value]
    if isinstance(value, np.ndarray):
        return card_json_data(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _card_depends_on(study: Study) -> str:
    """What the card depends on besides the study's own state: its finished replications and the
    trail of changed settings."""
    depends_on = "|replications:" + ",".join(
        f"{other.pk}@{other.finished_at.isoformat()}"
        for other in sorted(finished_replications(study=study), key=lambda other: other.pk)
    )
    # The trail is insert-only: its last row says whether a setting changed since the card was made.
    depends_on += f"|changes:{study.changes.aggregate(last=Max('pk'))['last']}"
    # So is the exclusion log, apart from a readmission, which sets lifted_at.
    exclusions = study.exclusions.aggregate(last=Max("pk"), lifted=Max("lifted_at"))
    depends_on += f"|exclusions:{exclusions['last']}@{exclusions['lifted']}"
    # Check answers are no votes: the study's state does not move with them.
    answers = CheckAnswer.objects.filter(annotator__study=study).aggregate(last=Max("pk"))
    depends_on += f"|checks:{answers['last']}"
    # The score models offered, and the study's own: one added or chosen is a new "Score models" section.
    return depends_on + f"|models:{study_score_model(study)}+{','.join(SCORE_MODELS)}"


def card_refresh_on_finish(sender, instance: Study, update_fields=None, **kwargs) -> None:
    """``post_save`` of a study: when the save finished it, compute its card and the cards of its finished
    replications (whose reproducibility sections name it) in the background, after the commit."""
    if instance.status != Study.Status.FINISHED or "status" not in (update_fields or ()):
        return
    for study in [instance, *finished_replications(study=instance)]:
        enqueue_on_commit(
            "metrics.instrument_card", study.pk, recovered_by="the card page, which computes an outdated card"
        )


def _study_changes(study: Study) -> list[dict]:
    """The settings changed after the start, oldest first. The card is public: who changed them is
    left to the admin and the staff API, and the values of private settings (completion code and
    URL, which would let anyone claim a crowd platform's payment) are left out."""
    entries = []
    for change in study.changes.all():
        setting = STUDY_SETTINGS.get(change.setting)
        private = setting is None or setting.private
        entries.append(
            {
                "changed_at": change.changed_at.isoformat(),
                "study_status": change.study_status,
                "setting": change.setting,
                "label": setting.label if setting else change.setting,
                "channel": change.channel,
                "private": private,
                "from": None if private else change.old_value,
                "to": None if private else change.new_value,
            }
        )
    return entries


def _compute_card(study: Study) -> dict:
    _card_progress_report(study, 0)
    votes = study_votes(study=study)
    item_count = votes.item_count
    plan = study_plan(study=study, item_count=item_count).as_dict() if item_count >= 2 else None
    ballots = list(
        study.ballots.order_by("number").values(
            "number",
            "status",
            "opened_at",
            "closed_at",
            "comparison_count",
            "votes_recorded",
            "rescale_slope",
            "area_rescale_slopes",
        )
    )
    areas = list(
        study.areas.annotate(
            tokens_count=Count("tokens", distinct=True), items_count=Count("items", distinct=True)
        ).values("name", "tokens_count", "items_count")
    )
    every_vote = arrays.study_votes(study_id=study.pk)  # open ballots too: what the annotators did
    per_annotator = np.unique(every_vote.annotator, return_counts=True)[1].astype(np.float64)
    card = {
        "version": CARD_VERSION,
        "study": {"name": study.name, "slug": study.slug, "status": study.status},
        "procedure": {
            "question": study.question,
            "instructions": study.instructions,
            "allow_ties": study.allow_ties,
            "ranking_scope": study.ranking_scope,
            "score_model": _score_model(study),
            "item_source": study.item_source or "not recorded",
            "areas": areas,
            "tokens": study.tokens.count(),
            "rare_tokens": study.tokens.filter(rare=True).count(),
            "items": item_count,
            "plan": plan,
            "lease_seconds": study.lease_seconds,
            "votes_per_annotator_per_ballot": study.votes_per_annotator_per_ballot,
            "dates": {
                "created": study.created_at.isoformat(),
                "started": study.started_at.isoformat() if study.started_at else None,
                "finished": study.finished_at.isoformat() if study.finished_at else None,
            },
            "ballots": [
                {
                    **b,
                    "opened_at": b["opened_at"].isoformat(),
                    "closed_at": b["closed_at"].isoformat() if b["closed_at"] else None,
                }
                for b in ballots
            ],
            "annotators": int(votes.annotator_ids.size),
            "votes": int(sum(b.vote_count for b in votes.ballots)),
            "votes_per_annotator": _describe(per_annotator),
            "response_ms": _describe(every_vote.response_ms),
        },
        "changes": _study_changes(study),
        # The votes of the closed ballots, as "votes" above, and their annotators: people and simulated apart.
        "crowd": study_crowd(study=study, closed_only=True).as_dict(),
        "checks": study_check_tally(study=study),
        "split": _split(study),
        "principle": (
            "Annotators compare two items (pairs of tokens) and choose the one whose tokens are more related; "
            "an item's score is its Borda win ratio, rescaled across ballots and averaged (Lombardo et al., Eq. 1, 5, 6). "
            "Ballots keep only the top fraction of items, so top ranks are measured with more comparisons."
        ),
    }
    if not votes.ballots:
        card["precision"] = card["repeatability"] = card["resolution"] = card["chance"] = None
        card["fragility"] = card["exclusions"] = None
        card["reproducibility"] = []
        card["areas"] = _area_figures(study, every_vote, np.full(item_count, np.nan), None)
        card["score_models"] = None
        _card_progress_report(study, CARD_STEPS)
        return card

    _card_progress_report(study, 1)  # the votes read
    score = current_scores(study=study, item_count=item_count)
    hidden = hidden_mask(study)
    replicates = study_replicates(study=study)
    _card_progress_report(study, 2)
    precision = precision_summary(replicates)
    card["precision"] = {
        "method": (
            "bootstrap of the votes within each ballot, the ballots' items held fixed; the study's one set of "
            "replicates, which the leaderboard's and the evaluations' intervals use too"
        ),
        "replicates": int(replicates.shape[0]),
        "mean_sd": precision["mean_sd"],
        "sd_quantiles": _describe(precision["sd"]),
        # One row per item, public: of the development part only in a study that keeps a hidden test part.
        "items": [
            {
                "index": index,
                "score": finite_or_none(score[index]),
                "sd": finite_or_none(precision["sd"][index]),
                "lower": finite_or_none(precision["lower"][index]),
                "upper": finite_or_none(precision["upper"][index]),
            }
            for index in np.flatnonzero(~hidden).tolist()
        ],
    }
    annotator_count = int(votes.annotator_ids.size)
    repeatability = {"split_half": None, "krippendorff_alpha": None, "krippendorff_alpha_people": None}
    if annotator_count >= 2:
        halves = split_half_reliability(
            votes.ballots,
            item_count,
            annotator_count,
            np.random.default_rng([study.seed, SPLIT_HALF_STREAM]),
            splits=100,
        )
        repeatability["split_half"] = {
            "splits": halves["splits"],
            "rho": halves["rho"],
            "rho_w": halves["rho_w"],
            "ballot_one_rho": halves["ballot_one_rho"],
            "ranking": "by ballot reached, then by the half's score ȳ",
        }
    repeatability["krippendorff_alpha"] = _nominal_alpha(votes.pair_low, votes.pair_high, votes.winner_is_low)
    if card["crowd"]["simulated"]["votes"]:
        # The people's votes alone: the same votes, in the same order, as those of ``study_votes``.
        closed = arrays.study_votes(study_id=study.pk, closed_only=True)
        simulated = study.annotators.filter(simulated=True).values_list("pk", flat=True)
        people = ~np.isin(closed.annotator, list(simulated))
        repeatability["krippendorff_alpha_people"] = _nominal_alpha(
            votes.pair_low[people], votes.pair_high[people], votes.winner_is_low[people]
        )
    card["repeatability"] = repeatability
    _card_progress_report(study, 3)
    # The curve lists the score differences of the compared pairs: in a study that keeps a hidden test
    # part, a difference to a published score would give a hidden one, so only pairs of two development
    # items count there.
    public_pair = ~hidden[votes.pair_low] & ~hidden[votes.pair_high]
    resolved = resolution(
        votes.pair_low[public_pair], votes.pair_high[public_pair], votes.winner_is_low[public_pair], score
    )
    resolved["part"] = "development" if hidden.any() else "all"
    curve = resolved.pop("curve")
    resolved["curve"] = {key: [float(v) for v in values] for key, values in curve.items()}
    card["resolution"] = resolved
    _card_progress_report(study, 4)
    chance = chance_for(study=study, item_count=item_count, weight_offset=DEFAULT_WEIGHT_OFFSET)
    card["chance"] = {
        name: {"mean": chance[name]["mean"], "sd": chance[name]["sd"]} for name in CHANCE_COEFFICIENTS
    } | {
        "weight_offset": DEFAULT_WEIGHT_OFFSET,
        "draws": chance["draw_count"],
    }
    _card_progress_report(study, 5)
    card["reproducibility"] = _reproducibility_entries(study, score, precision["sd"])
    card["areas"] = _area_figures(study, every_vote, score, precision["sd"])
    _card_progress_report(study, 6)
    card["fragility"] = _fragility(study, votes)
    card["exclusions"] = _exclusions(study)
    _card_progress_report(study, 7)
    # Every model's ranking is measured against the final one: a running study has none yet.
    card["score_models"] = (
        score_model_comparison(study=study) if study.status == Study.Status.FINISHED else None
    )
    if card["score_models"] is not None:
        for entries in [card["score_models"]["table"], *card["score_models"]["areas"]]:
            for entry in (entries or {}).get("models", []):
                entry.update(label=model_label(entry["model"]), description=model_description(entry["model"]))
    _card_progress_report(study, CARD_STEPS)
    return card


def _score_model(study: Study) -> dict:
    """The score model that made the study's ranking: its code, name and what it is."""
    model = study_score_model(study)
    return {"name": model, "label": model_label(model), "description": model_description(model)}


def _nominal_alpha(pair_low: np.ndarray, pair_high: np.ndarray, winner_is_low: np.ndarray) -> dict | None:
    """Krippendorff's α (nominal: the lower item, the higher item, a tie) over the pairs of items judged more
    than once, with how many pairs and votes; None with fewer than two such pairs or a single category."""
    units, counts = pair_value_counts(pair_low, pair_high, winner_is_low)
    if units.size < 2 or (counts.sum(axis=0) > 0).sum() < 2:
        return None
    alpha = krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
    return {"alpha": finite_or_none(alpha), "pairs": int(units.size), "votes": int(counts.sum())}


def _split(study: Study) -> dict | None:
    """The study's hidden test part as the public card states it: its share and size, never its items."""
    if not has_hidden_part(study):
        return None
    hidden = hidden_mask(study)
    return {
        "hidden_share": study.hidden_share,
        "development_items": int((~hidden).sum()),
        "test_items": int(hidden.sum()),
        "drawn": not study.is_draft,
    }


def _exclusions(study: Study) -> dict | None:
    """The excluded annotators' effect on the scores (``scoring.exclusion``): counts and agreement only,
    never who, since the card is public."""
    scores = scores_without_excluded(study=study)
    if scores is None:
        return None
    summary = scores.as_dict()
    summary["annotators"] = len(summary["annotators"])
    return summary


def _area_figures(study: Study, every_vote, score: np.ndarray, sd: np.ndarray | None) -> dict:
    """Coverage and precision per semantic area, and the votes that compared items of two areas.

    Per area: its items, those with a score ȳ (coverage), the votes that compared two of its items,
    the mean and median SD of ȳ over its items. ``cross_area_votes`` counts the votes whose two items
    are in different areas: 0 in a study ranked per area, by construction.
    """
    item_area = arrays.item_areas(study_id=study.pk)
    names = dict(study.areas.values_list("pk", "name"))
    area_ids, area_code = np.unique(item_area, return_inverse=True)
    area_count = area_ids.size
    left_code, right_code = area_code[every_vote.left], area_code[every_vote.right]
    within = left_code == right_code
    items = np.bincount(area_code, minlength=area_count)
    scored = np.bincount(area_code, weights=np.isfinite(score), minlength=area_count).astype(np.int64)
    votes_within = np.bincount(left_code[within], minlength=area_count)
    rows = []
    for code, area_id in enumerate(area_ids.tolist()):  # a loop over areas, not items
        inside = area_code == code
        area_sd = sd[inside] if sd is not None else np.empty(0)
        area_sd = area_sd[np.isfinite(area_sd)]
        rows.append(
            {
                "name": names.get(area_id, str(area_id)),
                "items": int(items[code]),
                "scored": int(scored[code]),
                "votes": int(votes_within[code]),
                "mean_sd": float(area_sd.mean()) if area_sd.size else None,
                "median_sd": float(np.median(area_sd)) if area_sd.size else None,
            }
        )
    rows.sort(key=lambda row: row["name"])
    return {
        "ranking_scope": study.ranking_scope,
        "cross_area_votes": int((~within).sum()),
        "votes": int(within.size),
        "by_area": rows,
    }


def _fragility(study: Study, votes) -> dict:
    """How few votes, removed, change the top item and the top-K set (scoring/fragility.py); in a
    study ranked per area, each area's (its own chain of ballots, Eq. 5 and 6 per area)."""
    table = fragility_table(votes)
    if study.ranking_scope == Study.RankingScope.PER_AREA:
        item_area = arrays.item_areas(study_id=study.pk)
        names = dict(study.areas.values_list("pk", "name"))
        strata = [
            (names.get(area, str(area)), np.flatnonzero(item_area == area)) for area in np.unique(item_area)
        ]
    else:
        strata = [("", np.arange(table.item_count))]
    entries = []
    for area, items in strata:  # a loop over areas, not items
        part = table if area == "" else table.restricted(items)
        ranked = int(np.count_nonzero(part.last_ballot > 0))
        for k in sorted({1, study.default_top_k(items.size)}):
            if not 1 <= k < ranked:
                continue
            found = removals_to_change(part, k, max_steps=FRAGILITY_MAX_STEPS)
            entries.append(
                {
                    "area": area,
                    "k": k,
                    "votes": found.votes,
                    "total": found.total,
                    "share": found.share,
                    "exact": found.exact,
                }
            )
    return {
        "method": (
            "greedy search, an upper bound: votes removed one at a time from the contested items, the ranking "
            "recomputed by Eq. 1, 6 and 5 with the ballots' items held fixed after each removal"
        ),
        "max_steps": FRAGILITY_MAX_STEPS,
        "entries": entries,
    }


def fragility_table(votes) -> VoteTable:
    """The closed ballots' votes and items (``metrics.selectors.StudyVotes``) as ``scoring.fragility`` reads them."""
    last_ballot = np.zeros(votes.item_count, dtype=np.int64)
    for number, ballot in enumerate(votes.ballots, start=1):  # n_b ballots, not items or votes
        last_ballot[ballot.items] = number
    sizes = [ballot.outcome.size for ballot in votes.ballots]
    return VoteTable(
        ballot=np.repeat(np.arange(1, len(sizes) + 1), sizes),
        left=np.concatenate([ballot.left for ballot in votes.ballots]).astype(np.int64),
        right=np.concatenate([ballot.right for ballot in votes.ballots]).astype(np.int64),
        outcome=np.concatenate([ballot.outcome for ballot in votes.ballots]).astype(np.float64),
        last_ballot=last_ballot,
    )


def _reproducibility_entries(study: Study, score: np.ndarray, sd: np.ndarray) -> list[dict]:
    """Agreement with every finished replication of the same items (a duplicate, or its original)."""
    entries = []
    for other in finished_replications(study=study):
        other_items = other.items.count()
        if other_items != score.size:
            continue
        other_score = current_scores(study=other, item_count=other_items)
        other_sd = precision_summary(study_replicates(study=other))["sd"]
        try:
            entry = reproducibility(score, other_score, sd, other_sd)
        except ValueError:
            continue
        entries.append(
            {"study": other.slug, "name": other.name}
            | {k: finite_or_none(v) if isinstance(v, float) else v for k, v in entry.items()}
        )
    return entries


def _describe(values: np.ndarray) -> dict | None:
    """Count, mean and five-number summary of the finite values; None when there are none."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {
        "count": int(values.size),
        "mean": float(values.mean()),
        "min": float(q[0]),
        "q1": float(q[1]),
        "median": float(q[2]),
        "q3": float(q[3]),
        "max": float(q[4]),
    }
