from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The REST API lives in projects; each app plugs its own resources in.
        from knowledge.api import router
        from knowledge.api_user import actions_router, peer_router
        from projects.api import api

        api.add_router("/knowledge", router)
        api.add_router("/action-items", actions_router)
        api.add_router("/peer-card", peer_router)
