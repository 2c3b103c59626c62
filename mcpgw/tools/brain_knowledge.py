"""brain_teach_knowledge, brain_get_user_style, brain_ask_oracle, brain_find_skill: one call each."""

from __future__ import annotations

from knowledge.selectors.live import skills_find, user_style
from knowledge.services.teach import knowledge_teach
from mcpgw import schemas_brain as s
from mcpgw.idempotent import once
from mcpgw.registry import NoArguments, tool
from projects.scope import Principal
from sessions.selectors.oracle import oracle_ask
from sessions.selectors.owned import session_open_project


@tool(
    title="Teach knowledge",
    description=(
        "Call when the user says \"remember ...\": stores the rule at confidence 1.0 in the project. Types: "
        "reflex, recipe, heuristic, principle, anti_principle, action_item (tags: action-item or "
        "open-question, for:<email>, optional meeting:<YYYY-MM-DD-slug>, blocker). supersedesKnowledgeId "
        "retires an older rule of yours in the same project. Without projectId the rule goes to the project "
        "of your open session."
    ),
    read_only=False, idempotent=False,
)
def brain_teach_knowledge(principal: Principal, args: s.TeachIn) -> s.TeachOut:
    def run() -> s.TeachOut:
        # Without projectId, the project the agent is working in (its open session) beats the first-project
        # fallback, which may be a Default an earlier smoke test created.
        project_id = args.project_id
        if project_id is None and args.scope == "project" and not principal.is_project_scoped:
            open_project = session_open_project(principal=principal)
            project_id = str(open_project) if open_project else None
        taught = knowledge_teach(
            principal=principal, rule=args.rule, type=args.type, trigger=args.trigger, rationale=args.rationale,
            tags=args.tags, project_id=project_id, framework=args.framework, language=args.language,
            supersedes_knowledge_id=args.supersedes_knowledge_id, scope=args.scope,
        )
        taught_in = taught.item.project_id
        return s.TeachOut.model_validate({
            "id": str(taught.item.id), "confidence": taught.item.confidence,
            "projectId": str(taught_in) if taught_in else None,
            "supersededId": str(taught.superseded_id) if taught.superseded_id else None,
        })

    return once(principal, "brain_teach_knowledge", args, s.TeachOut, run)


@tool(
    title="Get the user's style",
    description=(
        "Call when scaffolding new files, and first thing after connecting: the user's peer card (hard facts "
        "that override anything learned) and their strongest reflexes (confidence >= 0.7, up to 30)."
    ),
    read_only=True,
)
def brain_get_user_style(principal: Principal, args: NoArguments) -> s.StyleOut:
    return s.StyleOut.from_result(user_style(principal=principal))


@tool(
    title="Ask the oracle",
    description=(
        "Answers \"how did I solve X?\" from the user's own knowledge and sessions, with numbered citations "
        "and a groundedness level (high, medium, low, none) decided from the evidence alone."
    ),
    read_only=True,
)
def brain_ask_oracle(principal: Principal, args: s.OracleIn) -> s.OracleOut:
    return s.OracleOut.from_result(oracle_ask(principal=principal, question=args.question,
                                              project_id=args.project_id))


@tool(
    title="Find a skill",
    description=(
        "Call when the user wants a complete recipe: the best matching mature skills (knowledge or wisdom "
        "stage), ranked by meaning and words."
    ),
    read_only=True,
)
def brain_find_skill(principal: Principal, args: s.FindSkillIn) -> s.FindSkillOut:
    return s.FindSkillOut.from_result(skills_find(principal=principal, query=args.query, limit=args.limit))
