"""Dashboard routes: every project page carries the project id, checked against what the caller may see."""

from django.urls import path

from dashboard.views import guard, knowledge, oracle, overview, review, sessions, transfer

P = "<uuid:project_id>/"
K = P + "knowledge/<uuid:item_id>/"

urlpatterns = [
    path("", overview.home, name="dash_home"),
    path("switch", overview.switch, name="dash_switch"),
    path(P, overview.overview, name="dash_overview"),
    path(P + "knowledge/", knowledge.knowledge_index, name="dash_knowledge"),
    path(P + "knowledge/teach", knowledge.knowledge_teach_view, name="dash_knowledge_teach"),
    path(K, knowledge.knowledge_detail, name="dash_knowledge_detail"),
    path(K + "edit", knowledge.knowledge_edit_view, name="dash_knowledge_edit"),
    path(K + "supersede", knowledge.knowledge_supersede_view, name="dash_knowledge_supersede"),
    path(K + "delete", knowledge.knowledge_delete_view, name="dash_knowledge_delete"),
    path(K + "promote", knowledge.knowledge_promote_view, name="dash_knowledge_promote"),
    path(K + "pin", knowledge.knowledge_pin_view, name="dash_knowledge_pin"),
    path(P + "sessions/", sessions.sessions_index, name="dash_sessions"),
    path(P + "sessions/<uuid:session_id>/", sessions.session_view, name="dash_session"),
    path(P + "review/", review.review, name="dash_review"),
    path(P + "review/<uuid:proposal_id>/decide", review.proposal_decide, name="dash_proposal_decide"),
    path(P + "review/rules/<uuid:item_id>/decide", review.member_rule_decide, name="dash_member_rule_decide"),
    path(P + "review/contradictions/<uuid:pair_id>/resolve", review.contradiction_resolve_view,
         name="dash_contradiction_resolve"),
    path(P + "actions/", review.actions, name="dash_actions"),
    path(P + "oracle", oracle.oracle, name="dash_oracle"),
    path(P + "guard/", guard.guard_decisions, name="dash_guard"),
    path(P + "import", transfer.import_view, name="dash_import"),
    path(P + "export", transfer.export_view, name="dash_export"),
]
