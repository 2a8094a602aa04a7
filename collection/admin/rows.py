"""Read-only lists of the rows the protocol writes: pools, ballots, annotators, votes and the trail of
study changes. They change through the protocol, never by hand."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.template.response import TemplateResponse
from django.utils.html import format_html

from collection.admin.display import ReadOnlyAdmin, progress_bar
from collection.exclusion import annotator_exclude, annotator_readmit
from collection.models import (
    Annotator,
    Ballot,
    ExcludedVote,
    Exclusion,
    Item,
    SemanticArea,
    StudyChange,
    Token,
    Vote,
)
from collection.parts import hidden_items_q
from collection.selectors import areas_with_totals
from common.errors import ServiceError
from common.numbers import counted


class ExclusionReasonForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        max_length=1000,
        help_text="Kept in the exclusion log with your name and the time.",
    )


class AreaFilter(admin.SimpleListFilter):
    """Semantic areas, limited to the study chosen in the study filter (area names repeat across studies)."""

    title = "semantic area"
    parameter_name = "area"

    def lookups(self, request, model_admin):
        areas = SemanticArea.objects.select_related("study").order_by("study__name", "name")
        study_id = request.GET.get("study__id__exact", "")
        if study_id.isdigit():
            return [(str(area.pk), area.name) for area in areas.filter(study_id=study_id)]
        return [(str(area.pk), f"{area.name} ({area.study.name})") for area in areas]

    def queryset(self, request, queryset):
        value = self.value()
        if value and value.isdigit():
            return queryset.filter(area_id=value)
        return queryset


class HiddenRowsAdmin(ReadOnlyAdmin):
    """A list whose rows can show a human score of a study's hidden test part: those rows are left out for
    anyone who is not a researcher of that study (``collection.parts.hidden_items_q``)."""

    hidden_item_paths: tuple[str, ...] = ("",)  # how each row reaches an item ("" for an item itself)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        for path in self.hidden_item_paths:
            hidden = hidden_items_q(request.user, prefix=path)
            if hidden is not None:
                queryset = queryset.exclude(hidden)
        return queryset


@admin.register(StudyChange)
class StudyChangeAdmin(ReadOnlyAdmin):
    """The audit trail of every study: settings changed after the start, never edited."""

    list_display = (
        "changed_at",
        "study",
        "setting",
        "old_shown",
        "new_shown",
        "username",
        "channel",
        "study_status",
    )
    list_filter = ("channel", "study_status", "setting", "study")
    search_fields = ("study__name", "study__slug", "username", "setting")
    list_select_related = ("study",)
    date_hierarchy = "changed_at"

    @admin.display(description="from")
    def old_shown(self, change: StudyChange) -> str:
        return change.old_shown

    @admin.display(description="to")
    def new_shown(self, change: StudyChange) -> str:
        return change.new_shown


# --- pools, ballots, annotators and votes: read-only ---------------------------------------------


@admin.register(SemanticArea)
class SemanticAreaAdmin(ReadOnlyAdmin):
    list_display = ("name", "study", "token_total", "item_total")
    list_filter = ("study",)
    search_fields = ("name",)
    list_select_related = ("study",)

    def get_queryset(self, request):
        return areas_with_totals(super().get_queryset(request))

    @admin.display(description="tokens", ordering="token_total")
    def token_total(self, area):
        return area.token_total

    @admin.display(description="items", ordering="item_total")
    def item_total(self, area):
        return area.item_total


@admin.register(Token)
class TokenAdmin(ReadOnlyAdmin):
    list_display = ("text", "area", "rare", "study")
    list_filter = ("study", AreaFilter, "rare")
    search_fields = ("text",)
    list_select_related = ("area", "study")


@admin.register(Item)
class ItemAdmin(HiddenRowsAdmin):
    list_display = ("index", "__str__", "area", "study", "part", "final_rank", "final_score", "last_ballot")
    list_display_links = ("index", "__str__")
    list_filter = ("study", AreaFilter, "hidden", "last_ballot")
    search_fields = ("token_a__text", "token_b__text")
    list_select_related = ("token_a", "token_b", "area", "study")
    ordering = ("study", "final_rank", "index")

    @admin.display(description="part", ordering="hidden")
    def part(self, item: Item) -> str:
        return "hidden test" if item.hidden else "development"


@admin.register(Ballot)
class BallotAdmin(ReadOnlyAdmin):
    list_display = (
        "__str__",
        "status",
        "item_total",
        "progress",
        "opened_at",
        "deadline",
        "closed_at",
        "rescale_slope",
    )
    list_filter = ("status", "study")
    list_select_related = ("study",)
    exclude = ("items",)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(item_total=Count("items"))

    @admin.display(description="items", ordering="item_total")
    def item_total(self, ballot):
        return f"{ballot.item_total:,}"

    @admin.display(description="votes / comparisons")
    def progress(self, ballot):
        return format_html(
            "{} {} / {}",
            progress_bar(ballot.votes_recorded, ballot.comparison_count),
            f"{ballot.votes_recorded:,}",
            f"{ballot.comparison_count:,}",
        )


@admin.register(Annotator)
class AnnotatorAdmin(ReadOnlyAdmin):
    list_display = ("__str__", "study", "vote_total", "consented_at", "created_at", "excluded_at")
    list_filter = ("study", ("excluded_at", admin.EmptyFieldListFilter))
    search_fields = ("participant_id", "user__username")
    list_select_related = ("study", "user")
    actions = ["exclude_selected", "readmit_selected"]

    # Excluding and readmitting go through collection.exclusion, as the staff API does, with the reason a
    # page asks for first (the log keeps it); the annotators' rows themselves stay read-only.
    @admin.action(description="Exclude the selected annotators (asks for the reason)")
    def exclude_selected(self, request, queryset):
        return self._with_reason(request, queryset, "exclude")

    @admin.action(description="Readmit the selected annotators (asks for the reason)")
    def readmit_selected(self, request, queryset):
        return self._with_reason(request, queryset, "readmit")

    def _with_reason(self, request, queryset, what: str):
        if not request.user.is_staff:
            raise PermissionDenied
        form = ExclusionReasonForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            reason, done, problems = form.cleaned_data["reason"], 0, []
            for annotator in queryset.select_related("study"):  # the researcher's selection, a page at most
                try:
                    if what == "exclude":
                        done += annotator_exclude(annotator=annotator, reason=reason, by=request.user).created
                    else:
                        annotator_readmit(annotator=annotator, by=request.user, reason=reason)
                        done += 1
                except ServiceError as error:
                    problems.append(f"{annotator}: {error}")
            verb = "excluded" if what == "exclude" else "readmitted"
            self.message_user(request, f"{counted(done, 'annotator')} {verb}.", messages.SUCCESS)
            for problem in problems:
                self.message_user(request, problem, messages.ERROR)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Exclude annotators" if what == "exclude" else "Readmit annotators",
            "what": what,
            "annotators": queryset,
            "form": form,
            "action": request.POST.get("action", ""),
            "opts": self.model._meta,
            "selected": request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME),
        }
        return TemplateResponse(request, "admin/collection/annotator/exclusion_reason.html", context)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(vote_total=Count("votes"))

    @admin.display(description="votes", ordering="vote_total")
    def vote_total(self, annotator):
        return annotator.vote_total


@admin.register(Exclusion)
class ExclusionAdmin(ReadOnlyAdmin):
    """The exclusion log: who excluded which annotator (a researcher, or a rule), when, why; and readmissions.
    Written by collection.exclusion only (the API, the rule after each close)."""

    list_display = (
        "annotator",
        "study",
        "by",
        "excluded_at",
        "reason",
        "votes_set_aside",
        "lifted_at",
        "lifted_by_username",
    )
    list_filter = ("study", "rule", ("lifted_at", admin.EmptyFieldListFilter))
    search_fields = ("annotator__participant_id", "username", "reason")
    list_select_related = ("study", "annotator__user")


@admin.register(ExcludedVote)
class ExcludedVoteAdmin(HiddenRowsAdmin):
    """Votes of an open ballot set aside at their annotator's exclusion, every field kept."""

    hidden_item_paths = ("left_item__", "right_item__")
    list_display = ("vote_id", "annotator", "ballot", "choice", "response_ms", "created_at", "exclusion")
    list_filter = ("ballot__study",)
    list_select_related = ("annotator__user", "ballot__study", "exclusion")


@admin.register(Vote)
class VoteAdmin(HiddenRowsAdmin):
    hidden_item_paths = ("left_item__", "right_item__")
    list_display = (
        "pk",
        "study",
        "ballot_number",
        "annotator",
        "left_item",
        "right_item",
        "choice",
        "response_ms",
        "created_at",
    )
    list_filter = ("choice", "ballot__study")
    search_fields = ("annotator__participant_id",)
    list_select_related = (
        "ballot__study",
        "annotator__user",
        "left_item__token_a",
        "left_item__token_b",
        "right_item__token_a",
        "right_item__token_b",
    )

    @admin.display(description="study", ordering="ballot__study")
    def study(self, vote):
        return vote.ballot.study

    @admin.display(description="ballot k", ordering="ballot__number")
    def ballot_number(self, vote):
        return vote.ballot.number
