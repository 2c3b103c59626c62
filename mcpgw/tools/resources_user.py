"""The four brain://user/* resources: read-only JSON for quick context at session start."""

from __future__ import annotations

from knowledge.selectors.live import peer_card_of, skills_active, user_style
from mcpgw.registry import REGISTRY, Resource
from sessions.selectors.owned import sessions_recent

REGISTRY.add_resource(Resource(
    uri="brain://user/style-profile", name="style-profile", title="Style profile",
    description="The user's peer card and strongest reflexes.",
    reader=lambda principal: user_style(principal=principal),
))
REGISTRY.add_resource(Resource(
    uri="brain://user/active-skills", name="active-skills", title="Active skills",
    description="Skills in the knowledge or wisdom stage.",
    reader=lambda principal: {"skills": skills_active(principal=principal)},
))
REGISTRY.add_resource(Resource(
    uri="brain://user/recent-sessions", name="recent-sessions", title="Recent sessions",
    description="The user's last 10 sessions.",
    reader=lambda principal: {"sessions": sessions_recent(principal=principal)},
))
REGISTRY.add_resource(Resource(
    uri="brain://user/peer-card", name="peer-card", title="Peer card",
    description="Hard facts about the user that override anything learned.",
    reader=lambda principal: peer_card_of(principal=principal),
))
