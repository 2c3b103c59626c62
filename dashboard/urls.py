"""Dashboard routes: every project page carries the project id, checked against what the caller may see."""

from django.urls import path

from dashboard import views, views_knowledge, views_review, views_sessions

P = "<uuid:project_id>/"
K = P + "knowledge/<uuid:item_id>/"

urlpatterns = [
    path("", views.home, name="dash_home"),
    path("switch", views.switch, name="dash_switch"),
    path(P, views.overview, name="dash_overview"),
    path(P + "knowledge/", views_knowledge.knowledge_index, name="dash_knowledge"),
    path(P + "knowledge/teach", views_knowledge.knowledge_teach_view, name="dash_knowledge_teach"),
    path(K, views_knowledge.knowledge_detail, name="dash_knowledge_detail"),
    path(K + "edit", views_knowledge.knowledge_edit_view, name="dash_knowledge_edit"),
    path(K + "supersede", views_knowledge.knowledge_supersede_view, name="dash_knowledge_supersede"),
    path(K + "delete", views_knowledge.knowledge_delete_view, name="dash_knowledge_delete"),
    path(P + "sessions/", views_sessions.sessions_index, name="dash_sessions"),
    path(P + "sessions/<uuid:session_id>/", views_sessions.session_view, name="dash_session"),
    path(P + "review/", views_review.review, name="dash_review"),
    path(P + "review/<uuid:proposal_id>/decide", views_review.proposal_decide, name="dash_proposal_decide"),
    path(P + "review/contradictions/<uuid:pair_id>/resolve", views_review.contradiction_resolve_view,
         name="dash_contradiction_resolve"),
    path(P + "actions/", views_review.actions, name="dash_actions"),
    path(P + "oracle", views_review.oracle, name="dash_oracle"),
]
