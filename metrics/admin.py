"""The admin of the metrics app: invitation links for model owners' accounts."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils import timezone

from metrics.accounts import invitation_refusal, invitation_revoke
from metrics.models import Invitation, InvitedAccount


class InvitedAccountInline(admin.TabularInline):
    model = InvitedAccount
    fields = ["user", "joined_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    """A researcher makes a study's invitation link here and sends it; each use creates one account."""

    list_display = ["study", "note", "state", "uses", "max_uses", "expires_at", "created_by", "link"]
    list_filter = ["study"]
    list_select_related = ["study", "created_by"]
    fields = ["study", "note", "max_uses", "expires_at", "link", "state", "uses", "created_by", "created_at"]
    readonly_fields = ["link", "state", "uses", "created_by", "created_at"]
    inlines = [InvitedAccountInline]
    actions = ["revoke"]

    @admin.display(description="link")
    def link(self, invitation: Invitation) -> str:
        return reverse("metrics:join", args=[invitation.key]) if invitation.pk else "(made when saved)"

    @admin.display(description="state")
    def state(self, invitation: Invitation) -> str:
        if not invitation.pk:
            return "—"
        return invitation_refusal(invitation) or "valid: it creates accounts"

    def get_readonly_fields(self, request, obj=None):
        return [*self.readonly_fields, "study"] if obj is not None else self.readonly_fields

    def save_model(self, request, obj: Invitation, form, change) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if not change:
            url = request.build_absolute_uri(reverse("metrics:join", args=[obj.key]))
            self.message_user(
                request,
                f"Send this link to the model owners of {obj.study}: {url} — it creates up to {obj.max_uses} "
                f"accounts until {timezone.localtime(obj.expires_at):%Y-%m-%d %H:%M}.",
                messages.SUCCESS,
            )

    @admin.action(description="Revoke the selected invitations (their accounts stay)")
    def revoke(self, request, queryset) -> None:
        for invitation in queryset:
            invitation_revoke(invitation=invitation)
        self.message_user(request, f"{queryset.count()} invitation(s) revoked.", messages.SUCCESS)
