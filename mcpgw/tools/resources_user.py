"""The four brain://user/* resources: read-only JSON for quick context at session start.

Their documents are narrower than the tools' output models (no tags, score or why) and keep their own key
order, so they are written here field by field."""

from __future__ import annotations

from typing import Any

from knowledge.models import KnowledgeItem
from knowledge.selectors.live import PeerCardView, peer_card_of, skills_active, user_style
from mcpgw.registry import REGISTRY, Resource
from projects.scope import Principal
from sessions.models import Session
from sessions.selectors.owned import sessions_recent


def _peer_card(card: PeerCardView) -> dict[str, Any]:
    return {"email": card.email, "facts": card.facts,
            "updatedAt": card.updated_at.isoformat() if card.updated_at else None}


def _knowledge(row: KnowledgeItem) -> dict[str, Any]:
    return {"id": str(row.id), "type": row.type, "trigger": row.trigger, "rule": row.content,
            "rationale": row.rationale, "confidence": row.confidence, "stage": row.stage or None,
            "projectId": str(row.project_id) if row.project_id else None}


def _session(s: Session) -> dict[str, Any]:
    return {"sessionId": str(s.id), "projectId": str(s.project_id), "projectName": s.project.name,
            "clientType": s.client_type, "prompt": s.prompt_preview, "startedAt": s.started_at.isoformat(),
            "endedAt": s.ended_at.isoformat() if s.ended_at else None, "success": s.success, "sqs": s.quality_score}


def _style_profile(principal: Principal) -> dict[str, Any]:
    style = user_style(principal=principal)
    return {"peerCard": _peer_card(style.peer_card), "reflexes": [_knowledge(r) for r in style.reflexes]}


REGISTRY.add_resource(Resource(
    uri="brain://user/style-profile", name="style-profile", title="Style profile",
    description="The user's peer card and strongest reflexes.",
    reader=_style_profile,
))
REGISTRY.add_resource(Resource(
    uri="brain://user/active-skills", name="active-skills", title="Active skills",
    description="Skills in the knowledge or wisdom stage.",
    reader=lambda principal: {"skills": [_knowledge(r) for r in skills_active(principal=principal)]},
))
REGISTRY.add_resource(Resource(
    uri="brain://user/recent-sessions", name="recent-sessions", title="Recent sessions",
    description="The user's last 10 sessions.",
    reader=lambda principal: {"sessions": [_session(s) for s in sessions_recent(principal=principal)]},
))
REGISTRY.add_resource(Resource(
    uri="brain://user/peer-card", name="peer-card", title="Peer card",
    description="Hard facts about the user that override anything learned.",
    reader=lambda principal: _peer_card(peer_card_of(principal=principal)),
))
