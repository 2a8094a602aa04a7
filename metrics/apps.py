from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # A study that finishes gets its instrument card computed in the background. Collection, below
        # metrics, does not know of cards: metrics listens to the save that finishes a study.
        from django.db.models.signals import post_save

        from collection.models import Study
        from metrics.instrument import card_refresh_on_finish

        post_save.connect(card_refresh_on_finish, sender=Study, dispatch_uid="metrics.card_refresh_on_finish")
