from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Accounts and projects"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # brain is no app, so its checks are registered by the lowest app (import direction: projects -> brain).
        from django.core.checks import register

        from brain.checks import console_mail_in_production, public_url_unreachable, rate_limits_off_in_production

        for check in (console_mail_in_production, rate_limits_off_in_production, public_url_unreachable):
            register(check)
