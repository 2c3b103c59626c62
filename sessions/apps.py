from django.apps import AppConfig


class AgentSessionsConfig(AppConfig):
    # django.contrib.sessions owns the label "sessions".
    name = "sessions"
    label = "agent_sessions"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The REST API lives in projects; each app plugs its own resources in.
        from projects.api import api
        from sessions.api import router
        from sessions.api_export import router as export_router

        api.add_router("/sessions", router)
        api.add_router("/export", export_router)
