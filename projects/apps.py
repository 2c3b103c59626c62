from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Accounts and projects"
    default_auto_field = "django.db.models.BigAutoField"
