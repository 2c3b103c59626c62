from django.apps import AppConfig


class AgentSessionsConfig(AppConfig):
    # django.contrib.sessions owns the label "sessions".
    name = "sessions"
    label = "agent_sessions"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"
