from django.apps import AppConfig


class CommonConfig(AppConfig):
    name = "common"
    verbose_name = "Common plumbing"

    def ready(self):
        from common import throttling  # noqa: F401  (connects the failed-login counters)
