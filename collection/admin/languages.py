"""The study's texts in more languages: ``StudyTranslation`` inline on the study's page, and the
instructed-response checks' instructions (``CheckTranslation``) on a page of their own (the admin does not
nest inlines)."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from collection.models import Check, CheckTranslation, StudyTranslation


class StudyTranslationInline(admin.StackedInline):
    """The study's name, question and instructions in another language than its own."""

    model = StudyTranslation
    extra = 0
    fields = ("language", "name", "question", "instructions")
    verbose_name = "translation"
    verbose_name_plural = (
        "Translations: the study's texts in more languages. An annotator who asks for one of them sees the "
        "pages in it only when it is complete here and every instructed-response check has its instruction "
        "in it (Check translations); otherwise the whole page is in the study's language"
    )


class CheckTranslationForm(forms.ModelForm):
    class Meta:
        model = CheckTranslation
        fields = ("check_item", "language", "instruction")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["check_item"]
        field.queryset = Check.objects.filter(kind=Check.Kind.INSTRUCTED).select_related("study")
        field.label = "instructed-response check"
        field.label_from_instance = lambda check: (
            f"{check.study.slug}: {check.instruction} ({check.expected})"
        )


@admin.register(CheckTranslation)
class CheckTranslationAdmin(admin.ModelAdmin):
    form = CheckTranslationForm
    list_display = ("__str__", "study_slug", "language", "instruction")
    list_filter = ("language", "check_item__study")
    search_fields = ("instruction", "check_item__instruction", "check_item__study__slug")
    list_select_related = ("check_item__study",)

    @admin.display(description="study", ordering="check_item__study__slug")
    def study_slug(self, translation: CheckTranslation) -> str:
        return translation.check_item.study.slug
