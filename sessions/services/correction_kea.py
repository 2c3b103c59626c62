"""Deriving {forbidden action, procedure} from an operator's correction: the KEA model when one is set,
the "not X, use Y" heuristics otherwise, and the heuristics again whenever the model fails, is slow or
answers anything but the asked JSON. An agent waits on this call, so the model gets one short attempt."""

from __future__ import annotations

import logging
import uuid

from brain.logs import log_op
from knowledge.llm import HEURISTIC, LlmUnavailable, complete, configured_model
from knowledge.llm_json import MalformedReply, parse_json_reply
from knowledge.services.quota import llm_quota_claim
from sessions.services.policy import correction_parse

logger = logging.getLogger(__name__)
TIMEOUT_S = 8.0
ATTEMPTS = 1
PART_MAX = 500  # characters of one derived part; a longer one is not an action name
SYSTEM = (
    "An operator corrected a coding agent. If the correction forbids one action and names the action to use "
    "instead, reply with JSON only: {\"forbidden_action\": \"<what not to do>\", \"procedure\": \"<what to do "
    "instead>\"}, each a short phrase in the operator's words (a command, tool, library or file). Otherwise reply "
    "{\"forbidden_action\": null, \"procedure\": null}."
)


def _parts(reply: str) -> tuple[str, str] | None:
    """The pair from a strict answer; MalformedReply for any other shape."""
    value = parse_json_reply(reply)
    if not isinstance(value, dict) or set(value) != {"forbidden_action", "procedure"}:
        raise MalformedReply("expected exactly the keys forbidden_action and procedure")
    forbidden, procedure = value["forbidden_action"], value["procedure"]
    if forbidden is None and procedure is None:
        return None
    if not all(isinstance(v, str) and v.strip() and len(v) <= PART_MAX for v in (forbidden, procedure)):
        raise MalformedReply("forbidden_action and procedure must both be short non-empty strings, or both null")
    return " ".join(forbidden.split()), " ".join(procedure.split())


def correction_derive(*, text: str, user_id: uuid.UUID) -> tuple[tuple[str, str] | None, str]:
    """((forbidden, procedure) or None, what derived it: the model's name or "heuristic")."""
    model = configured_model()
    if model == HEURISTIC or not llm_quota_claim(user_id=user_id):
        return correction_parse(text), HEURISTIC
    try:
        reply = complete(system=SYSTEM, prompt=text, model=model, max_tokens=200, timeout_s=TIMEOUT_S,
                         max_attempts=ATTEMPTS)
        return _parts(reply), model
    except (LlmUnavailable, MalformedReply) as exc:
        log_op(logger, "cognibrain.correction_fallback", level=logging.WARNING, model=model, reason=str(exc)[:200])
        return correction_parse(text), HEURISTIC
