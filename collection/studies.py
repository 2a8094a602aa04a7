"""Studies: their plan, and one rule set for creating, changing, duplicating and deleting them.

The admin, the API and commands all go through these services. Forms and serializers check the shape
of each field (a number in range, a URL); what depends on the study's state, its items or several
fields together is decided here, on the study's locked row, so that a start racing a change is decided
one way or the other. Every change of a started study is recorded in StudyChange (who, when, through
which channel, from what to what).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from collection import limits
from collection.checks import checks_across_areas_problem
from collection.models import Check, Item, SemanticArea, Study, StudyChange, Token
from common.errors import ServiceError, StudyStateError
from scoring.plan import AreaPlans, BallotPlan, area_plans, ballot_plan, plan_for_budget

# --- the plan ------------------------------------------------------------------------------------


def study_area_item_counts(*, study: Study) -> dict[str, int]:
    """The number of items of each semantic area of the study that has any, by area name."""
    rows = (
        Item.objects.filter(study=study)
        .values_list("area__name")
        .annotate(count=Count("id"))
        .order_by("area__name")
    )
    return dict(rows)


def study_area_plans(*, study: Study) -> AreaPlans:
    """The plan of each semantic area of a study ranked per area, and their sum (``scoring.plan.area_plans``)."""
    fixed_sizes = None
    if study.ballot_sizes:  # started: the areas' sizes fixed then
        fixed_sizes = dict(SemanticArea.objects.filter(study=study).values_list("name", "ballot_sizes"))
    try:
        plans = area_plans(
            area_item_counts=study_area_item_counts(study=study),
            ballot_count=study.ballot_count,
            keep_fraction=study.keep_fraction,
            appearances=study.appearances or None,
            comparison_budget=None if study.appearances else study.comparison_budget,
            seconds_per_comparison=study.seconds_per_comparison,
            fixed_sizes=fixed_sizes,
        )
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    _check_size(plans.total)
    return plans


def study_plan(*, study: Study, item_count: int | None = None) -> BallotPlan:
    """The study's ballot plan for its current number of items (Eq. 2-4, 10 and §2.7 warnings).

    For a study ranked per area, the sum of its areas' plans (``study_area_plans``): ``item_count`` is
    then ignored, as the plan depends on each area's items.
    """
    if study.pk is not None and study.ranking_scope == Study.RankingScope.PER_AREA:
        return study_area_plans(study=study).total
    count = study.items.count() if item_count is None else item_count
    common = dict(
        item_count=count,
        ballot_count=study.ballot_count,
        keep_fraction=study.keep_fraction,
        seconds_per_comparison=study.seconds_per_comparison,
    )
    try:
        if study.appearances:
            plan = ballot_plan(appearances=study.appearances, sizes=study.ballot_sizes, **common)
        elif study.comparison_budget:
            plan = plan_for_budget(comparison_budget=study.comparison_budget, **common)
        else:
            raise ServiceError("the plan needs either appearances M or a comparison budget")
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    _check_size(plan)
    return plan


def _check_size(plan: BallotPlan) -> None:
    if plan.total_comparisons > limits.MAX_TOTAL_COMPARISONS:
        raise ServiceError(
            f"this plan needs {plan.total_comparisons:,} comparisons (N_comp, Eq. 3); a study runs at most "
            f"{limits.MAX_TOTAL_COMPARISONS:,} (833 person-hours at 6 s each; every comparison is a row made "
            "when its ballot opens): lower M, n_b or α, or use fewer items"
        )


# --- the settings and the states in which each may change ----------------------------------------

_DRAFT_ONLY = frozenset({Study.Status.DRAFT})

_UNTIL_FINISHED = frozenset({Study.Status.DRAFT, Study.Status.RUNNING})

_ALWAYS = frozenset(Study.Status.values)

_PLAN_SHAPED = "the plan shaped the ballots already opened"

_COLLECTED = "the collection is over"

_REPORTED = "the collection is over and the instrument card reports the value it ran with"


@dataclass(frozen=True)
class StudySetting:
    """A setting of a study: the states in which it may change, and why it may not in the others."""

    label: str
    editable_in: frozenset[str]
    frozen_because: str = ""
    private: bool = False  # a secret of the crowd platform: its values stay off the public card


STUDY_SETTINGS: dict[str, StudySetting] = {
    # A label: nothing is measured with it.
    "name": StudySetting("name", _ALWAYS),
    "slug": StudySetting("slug", _DRAFT_ONLY, "the annotators' links (/s/<slug>/) already carry it"),
    # Wording may be corrected while running (a typo found after launch): the change and its time are
    # on the instrument card. Once finished, it is the procedure the votes were collected under.
    "question": StudySetting(
        "question", _UNTIL_FINISHED, "the votes were collected under it and the instrument card reports it"
    ),
    "instructions": StudySetting(
        "instructions",
        _UNTIL_FINISHED,
        "the votes were collected under them and the instrument card reports them",
    ),
    # The language of the texts above and the pages' fallback (collection/languages.py).
    "language": StudySetting("language", _UNTIL_FINISHED, "the votes were collected under it"),
    # What a vote means and how the ballots were drawn: fixed by the first ballot.
    "allow_ties": StudySetting(
        "ties allowed", _DRAFT_ONLY, "the votes already cast were given with the same answers on offer"
    ),
    "ballot_count": StudySetting("ballots n_b", _DRAFT_ONLY, _PLAN_SHAPED),
    "keep_fraction": StudySetting("fraction kept α", _DRAFT_ONLY, _PLAN_SHAPED),
    "appearances": StudySetting("appearances M", _DRAFT_ONLY, _PLAN_SHAPED),
    "comparison_budget": StudySetting("comparison budget", _DRAFT_ONLY, _PLAN_SHAPED),
    "seconds_per_comparison": StudySetting(
        "seconds per comparison", _DRAFT_ONLY, "the plan's cost estimate (Eq. 10) was made with it"
    ),
    "seed": StudySetting("seed", _DRAFT_ONLY, "it drew the schedules of the ballots already opened"),
    "ranking_scope": StudySetting(
        "ranking scope (joint or per area)", _DRAFT_ONLY, "the ballots already opened were drawn with it"
    ),
    # How the collection runs, not what a vote means; each applies from its change on: a lease to the
    # comparisons leased after it, a cap to the next comparison asked for, a deadline to the ballots
    # opened after it (the open ballot keeps its deadline: close it now to end it early).
    "lease_seconds": StudySetting("lease (seconds)", _UNTIL_FINISHED, _REPORTED),
    "votes_per_annotator_per_ballot": StudySetting(
        "cap per annotator and ballot", _UNTIL_FINISHED, _REPORTED
    ),
    "ballot_deadline_hours": StudySetting("ballot deadline (hours)", _UNTIL_FINISHED, _REPORTED),
    "completion_redirect_url": StudySetting("completion URL", _UNTIL_FINISHED, _COLLECTED, private=True),
    "completion_code": StudySetting("completion code", _UNTIL_FINISHED, _COLLECTED, private=True),
    "require_signed_links": StudySetting("signed participant links required", _UNTIL_FINISHED, _COLLECTED),
    # The crowd platform's conventions (collection/crowd.py): exits, codes, the consent page's estimate.
    "no_work_code": StudySetting("no-work code", _UNTIL_FINISHED, _COLLECTED, private=True),
    "screened_out_code": StudySetting("screened-out code", _UNTIL_FINISHED, _COLLECTED, private=True),
    "max_wait_seconds": StudySetting("longest wait for work (seconds)", _UNTIL_FINISHED, _COLLECTED),
    "min_judgements": StudySetting("judgements before Finish", _UNTIL_FINISHED, _COLLECTED),
    "participant_codes": StudySetting("a code per participant", _UNTIL_FINISHED, _COLLECTED),
    "pay_per_hour": StudySetting("pay per hour", _UNTIL_FINISHED, _COLLECTED),
    "pay_currency": StudySetting("pay currency", _UNTIL_FINISHED, _COLLECTED),
    # How models are evaluated against the ranking, not how the ranking was measured.
    "minimum_coverage": StudySetting("minimum coverage of a submission", _ALWAYS),
    "max_variants_per_owner": StudySetting("models one owner may submit", _ALWAYS),
    "relevant_top_k": StudySetting("relevant top K", _ALWAYS),
    # Which items are hidden is drawn when the study starts: from then on annotators have voted on the
    # items of both parts, and moving an item from one to the other would publish its score.
    "hidden_share": StudySetting(
        "hidden test share",
        _DRAFT_ONLY,
        "the hidden test part was drawn when the study started; moving items between the parts would "
        "publish the scores of items kept hidden until now",
    ),
    # Quality control: thresholds the results page judges the annotators' votes by. They change no vote
    # and no part of the design, so a researcher may tune them while the study runs and after.
    "quality_fast_ms": StudySetting("fast answer (ms)", _ALWAYS),
    "quality_max_fast_share": StudySetting("largest share of fast answers", _ALWAYS),
    "quality_position_alpha": StudySetting("position-bias significance level α", _ALWAYS),
    "quality_min_majority_agreement": StudySetting("smallest agreement with the majority", _ALWAYS),
    "quality_min_self_agreement": StudySetting("smallest self-agreement", _ALWAYS),
    "quality_max_failed_checks": StudySetting("failed checks that flag an annotator", _ALWAYS),
    # How often the lease serves a check instead of a comparison: it changes which checks are answered,
    # never a vote or the design, so it may change while the study runs.
    "check_rate": StudySetting("share of checks among the comparisons served", _UNTIL_FINISHED, _COLLECTED),
    # The rule that excludes flagged annotators when a ballot closes: it stops votes, so only while the
    # collection runs; closed ballots are never re-run (the results show the scores with and without).
    "exclude_flagged_annotators": StudySetting("exclude flagged annotators", _UNTIL_FINISHED, _COLLECTED),
    # The finish scores the final ranking with it (collection.lifecycle.study_finish).
    "score_model": StudySetting("score model", _UNTIL_FINISHED, "the final ranking was scored with it"),
}

QUALITY_SETTINGS = tuple(name for name in STUDY_SETTINGS if name.startswith("quality_"))


PLAN_SETTINGS = (
    "ranking_scope",
    "ballot_count",
    "keep_fraction",
    "appearances",
    "comparison_budget",
    "seconds_per_comparison",
)


def study_settings_frozen(*, status: str) -> tuple[str, ...]:
    """The settings that cannot change in this state, in the order of ``STUDY_SETTINGS``."""
    return tuple(name for name, setting in STUDY_SETTINGS.items() if status not in setting.editable_in)


def study_setting_problems(*, study: Study, changed) -> list[tuple[str | None, str]]:
    """(setting or None, message) for every rule that ``study``, its ``changed`` settings set, breaks.

    The rules that need more than one field: M or a budget but not both, a plan possible for the items
    of the draft, no gold check across areas in a study ranked per area, a slug not taken, and the
    database's check constraints, said in words.
    """
    changed = set(changed)
    problems: list[tuple[str | None, str]] = []
    try:
        study.clean_fields(exclude=[f.name for f in Study._meta.concrete_fields if f.name not in changed])
    except DjangoValidationError as exc:
        problems += [(name, message) for name, messages in exc.message_dict.items() for message in messages]
    # Bounded here, not by a validator on the field: the field's migration (0028) is shared.
    if "min_judgements" in changed and (study.min_judgements or 0) > limits.MAX_MIN_JUDGEMENTS:
        problems.append(("min_judgements", limits.MIN_JUDGEMENTS_MESSAGE))
    if changed & set(PLAN_SETTINGS):
        if study.appearances is None and study.comparison_budget is None:
            problems.append(
                (
                    "appearances",
                    "the plan needs the appearances M of each item per ballot (the paper uses 20) or a "
                    "comparison budget from which M is derived",
                )
            )
        elif study.appearances is not None and study.comparison_budget is not None:
            problems.append(
                (
                    None,
                    "give either the appearances M or a comparison budget, not both: with a budget, M is "
                    "derived from it. Clear one of the two fields",
                )
            )
    if (
        "ranking_scope" in changed
        and study.pk is not None
        and study.ranking_scope == Study.RankingScope.PER_AREA
    ):
        if across := checks_across_areas_problem(study=study):
            problems.append(("ranking_scope", across))
    if "slug" in changed and Study.objects.filter(slug=study.slug).exclude(pk=study.pk).exists():
        problems.append(("slug", f"a study with the slug {study.slug!r} exists already; choose another"))
    checked = {f.name for f in Study._meta.concrete_fields} - changed | {name for name, _ in problems}
    try:
        study.validate_constraints(exclude=checked | {"appearances", "comparison_budget"})
    except DjangoValidationError as exc:
        problems += [(None, message) for message in exc.messages]
    if not problems and study.pk is not None and changed & set(PLAN_SETTINGS):
        item_count = study.items.count()
        if item_count:
            try:
                study_plan(study=study, item_count=item_count)
            except ServiceError as exc:
                problems.append(("plan", exc.message))
    return problems


def _refuse(problems: list[tuple[str | None, str]]) -> None:
    lines = [f"{name}: {message}" if name else message for name, message in problems]
    raise ServiceError("; ".join(lines), errors=lines)


def _check_setting_names(values) -> None:
    unknown = sorted(set(values) - set(STUDY_SETTINGS))
    if unknown:
        raise ServiceError(
            f"{', '.join(unknown)}: not a setting of a study; the settings are {', '.join(STUDY_SETTINGS)}"
        )


def _account(user):
    return user if user is not None and user.is_authenticated else None


# --- create, change, delete, duplicate -----------------------------------------------------------


@transaction.atomic
def study_create(*, values, user=None) -> Study:
    """A new draft with these settings (the others at their defaults), created by ``user``.

    A comparison budget given without M means M is derived from it.
    """
    _check_setting_names(values)
    values = dict(values)
    if values.get("comparison_budget") is not None and "appearances" not in values:
        values["appearances"] = None
    study = Study(**values, created_by=_account(user))
    if problems := study_setting_problems(study=study, changed=STUDY_SETTINGS):
        _refuse(problems)
    try:
        with transaction.atomic():
            study.save(force_insert=True)
    except IntegrityError:  # the same slug created meanwhile
        if Study.objects.filter(slug=study.slug).exists():
            _refuse([("slug", f"a study with the slug {study.slug!r} exists already; choose another")])
        raise
    return study


@transaction.atomic
def study_update(*, study: Study, changes, user=None, channel: str, now: datetime | None = None) -> Study:
    """Change some settings of a study, if its state allows each one; returns the study as saved.

    All or nothing. A setting frozen in the study's state (``STUDY_SETTINGS``) refuses the whole
    change with 409 and why; a broken rule with 400. Settings given with their current value are not
    changes. Each setting a started study changes is recorded in ``StudyChange`` with ``user``,
    ``channel`` (admin, api or command), the time and the values before and after.
    """
    if channel not in StudyChange.Channel.values:
        raise ValueError(f"channel must be one of {StudyChange.Channel.values}, got {channel!r}")
    _check_setting_names(changes)
    locked = Study.objects.select_for_update().get(pk=study.pk)
    changed = {
        name: changes[name]
        for name in STUDY_SETTINGS
        if name in changes and changes[name] != getattr(locked, name)
    }
    frozen = [name for name in changed if locked.status not in STUDY_SETTINGS[name].editable_in]
    if frozen:
        lines = [
            f"{name}: cannot change now that the study is {locked.status}: {STUDY_SETTINGS[name].frozen_because}"
            for name in frozen
        ]
        raise StudyStateError(
            f"the study is {locked.status}, so {', '.join(frozen)} cannot change any more; nothing was "
            "changed. Duplicate the study to run the same items again with other values",
            errors=lines,
        )
    if not changed:
        return locked
    before = {name: getattr(locked, name) for name in changed}
    for name, value in changed.items():
        setattr(locked, name, value)
    if problems := study_setting_problems(study=locked, changed=changed):
        _refuse(problems)
    locked.save(update_fields=list(changed))
    if locked.status != Study.Status.DRAFT:
        account = _account(user)
        moment = now or timezone.now()
        StudyChange.objects.bulk_create(
            [
                StudyChange(
                    study=locked,
                    user=account,
                    username=account.get_username() if account else "",
                    channel=channel,
                    changed_at=moment,
                    study_status=locked.status,
                    setting=name,
                    old_value=before[name],
                    new_value=value,
                )
                for name, value in changed.items()
            ]
        )
    return locked


def study_deletable(study: Study) -> bool:
    """Only a draft may be deleted: a started study's votes and trail stay."""
    return study.status == Study.Status.DRAFT


@transaction.atomic
def study_delete(*, study: Study) -> None:
    """Delete a draft with its pools. A started study is kept (409): its votes and trail stay."""
    locked = Study.objects.select_for_update().filter(pk=study.pk).first()
    if locked is None:
        return
    if not study_deletable(locked):
        raise StudyStateError(
            f"the study is {locked.status}: only a draft can be deleted, so that no votes are lost"
        )
    locked.delete()


def _within(text: str, max_length: int, *, suffix: str = "") -> str:
    """``text + suffix``, with ``text`` shortened so that the whole fits in ``max_length``."""
    return text[: max_length - len(suffix)] + suffix


def _free_slug(stem: str, suffix: str = "") -> str:
    """``stem + suffix``, or ``stem + suffix + "-2"``, ``-3`` … if taken, ``stem`` shortened to fit."""
    max_length = Study._meta.get_field("slug").max_length
    taken = set(Study.objects.filter(slug__startswith=stem[: max_length // 2]).values_list("slug", flat=True))
    candidate, number = _within(stem, max_length, suffix=suffix), 2
    while candidate in taken:
        candidate, number = _within(stem, max_length, suffix=f"{suffix}-{number}"), number + 1
    return candidate


@transaction.atomic
def study_duplicate(*, study: Study, name: str | None = None, slug: str | None = None, user=None) -> Study:
    """A draft copy with the same areas, tokens, items (same indices) and plan, and no votes.

    This is the replication the metrology of crowd benchmarks asks for: the same instrument, run again.
    """
    copy = Study.objects.create(
        name=name or _within(study.name, Study._meta.get_field("name").max_length, suffix=" (replication)"),
        slug=_free_slug(slug) if slug else _free_slug(study.slug, "-copy"),
        require_signed_links=study.require_signed_links,
        question=study.question,
        instructions=study.instructions,
        allow_ties=study.allow_ties,
        ranking_scope=study.ranking_scope,
        ballot_count=study.ballot_count,
        keep_fraction=study.keep_fraction,
        appearances=study.appearances,
        comparison_budget=study.comparison_budget,
        seconds_per_comparison=study.seconds_per_comparison,
        lease_seconds=study.lease_seconds,
        votes_per_annotator_per_ballot=study.votes_per_annotator_per_ballot,
        ballot_deadline_hours=study.ballot_deadline_hours,
        completion_redirect_url=study.completion_redirect_url,
        max_wait_seconds=study.max_wait_seconds,
        participant_codes=study.participant_codes,
        pay_per_hour=study.pay_per_hour,
        pay_currency=study.pay_currency,
        item_source=study.item_source,
        minimum_coverage=study.minimum_coverage,
        max_variants_per_owner=study.max_variants_per_owner,
        relevant_top_k=study.relevant_top_k,
        hidden_share=study.hidden_share,
        **{name: getattr(study, name) for name in QUALITY_SETTINGS},
        check_rate=study.check_rate,
        created_by=user,
        duplicated_from=study,
    )
    areas = {a.pk: SemanticArea.objects.create(study=copy, name=a.name) for a in study.areas.all()}
    old_tokens = list(study.tokens.all())
    new_tokens = Token.objects.bulk_create(
        [Token(study=copy, area=areas[t.area_id], text=t.text, rare=t.rare) for t in old_tokens]
    )
    if any(t.pk is None for t in new_tokens):  # backends that do not return ids from bulk_create
        by_text = {t.text: t for t in copy.tokens.all()}
        new_tokens = [by_text[t.text] for t in old_tokens]
    token_map = {old.pk: new for old, new in zip(old_tokens, new_tokens, strict=True)}
    Item.objects.bulk_create(
        [
            Item(
                study=copy,
                area=areas[item.area_id],
                token_a=min(token_map[item.token_a_id], token_map[item.token_b_id], key=lambda t: t.pk),
                token_b=max(token_map[item.token_a_id], token_map[item.token_b_id], key=lambda t: t.pk),
                index=item.index,
            )
            for item in study.items.all()
        ],
        batch_size=2000,
    )
    # The checks too: the same instrument has the same attention checks, on the copy's items.
    item_of_index = dict(copy.items.values_list("index", "pk"))
    Check.objects.bulk_create(
        [
            Check(
                study=copy,
                kind=check.kind,
                left_item_id=item_of_index[check.left_item.index],
                right_item_id=item_of_index[check.right_item.index],
                expected=check.expected,
                instruction=check.instruction,
            )
            for check in study.checks.select_related("left_item", "right_item")
        ]
    )
    return copy
