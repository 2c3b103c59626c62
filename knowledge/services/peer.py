"""Writes of the peer card: the user's hard facts that override anything learned."""

from __future__ import annotations

from django.db import transaction

from brain.errors import ValidationFailed
from brain.text import text_storable
from knowledge.models import PeerCard
from projects.models import User

MAX_FACTS = 40
FACT_KEY_MAX, FACT_VALUE_MAX = 60, 500  # characters; longer ones are cut here (the dashboard's form refuses them)


@transaction.atomic
def peer_card_set(*, user: User, facts: dict[str, str]) -> PeerCard:
    """Replaces the user's facts (short keys and values); an empty value removes that fact."""
    text_storable(facts=facts)
    clean = {str(k).strip()[:FACT_KEY_MAX]: str(v).strip()[:FACT_VALUE_MAX] for k, v in facts.items()
             if str(k).strip()}
    clean = {k: v for k, v in clean.items() if v}
    if len(clean) > MAX_FACTS:
        raise ValidationFailed(f"a peer card holds at most {MAX_FACTS} facts")
    card, _ = PeerCard.objects.select_for_update().get_or_create(user=user)
    card.facts = clean
    card.save(update_fields=["facts", "updated_at"])
    return card
