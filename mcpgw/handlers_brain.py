"""Handlers of the brain tools: parse is done by the schema, each handler makes one service or selector
call and shapes its result. The REST API and the dashboard call the same services."""

from __future__ import annotations

from knowledge.inject import Injection
from knowledge.selectors_style import skills_find, user_style
from knowledge.services_teach import knowledge_teach
from mcpgw import schemas_brain as s
from projects.scope import Principal
from sessions.selectors_oracle import oracle_ask
from sessions.selectors_search import sessions_find
from sessions.services_events import session_event_record
from sessions.services_open import session_open
from sessions.services_outcome import OutcomeReport, session_report_outcome
from sessions.services_retrieve import knowledge_retrieve


def _injection(value: Injection | None) -> s.InjectionOut | None:
    if value is None:
        return None
    return s.InjectionOut(knowledgeIds=[str(i) for i in value.knowledge_ids], injection=value.text)


def start_session(principal: Principal, args: s.StartSessionIn) -> s.StartSessionOut:
    opened = session_open(
        principal=principal, client_type=args.clientType, prompt=args.prompt, framework=args.framework,
        language=args.language, project_id=args.projectId, project_name=args.projectName,
    )
    return s.StartSessionOut(
        sessionId=str(opened.session.id), startedAt=opened.session.started_at,
        projectId=str(opened.session.project_id), projectSource=opened.project_source,
        relevantKnowledge=_injection(opened.relevant_knowledge), openActionItems=_injection(opened.open_action_items),
    )


def retrieve_knowledge(principal: Principal, args: s.RetrieveIn) -> s.RetrieveOut:
    ctx = args.context or s.RetrieveContext.model_validate({})
    out = knowledge_retrieve(
        principal=principal, prompt=args.prompt, session_id=ctx.sessionId, project_id=ctx.projectId,
        framework=ctx.framework, language=ctx.language, limit=args.limit, budget_tokens=args.budgetTokens,
    )
    return s.RetrieveOut.model_validate(out)


def report_session_outcome(principal: Principal, args: s.ReportIn) -> s.ReportOut:
    report = OutcomeReport(
        success=args.success, user_feedback=args.userFeedback, build_attempts=args.buildAttempts,
        errors=args.errors, files_created=args.filesCreated, files_modified=args.filesModified,
        files_rejected=args.filesRejected, knowledge_used=args.knowledgeUsed, learnings=args.learnings,
        resolved_action_item_ids=args.resolvedActionItemIds, summary=args.summary,
    )
    return s.ReportOut.model_validate(session_report_outcome(principal=principal, session_id=args.sessionId,
                                                             report=report))


def teach_knowledge(principal: Principal, args: s.TeachIn) -> s.TeachOut:
    taught = knowledge_teach(
        principal=principal, rule=args.rule, type=args.type, trigger=args.trigger, rationale=args.rationale,
        tags=args.tags, project_id=args.projectId, framework=args.framework, language=args.language,
        supersedes_knowledge_id=args.supersedesKnowledgeId,
    )
    item = taught.item
    return s.TeachOut(id=str(item.id), confidence=item.confidence, projectId=str(item.project_id),
                      supersededId=str(taught.superseded_id) if taught.superseded_id else None)


def get_user_style(principal: Principal, args: s.EmptyIn) -> s.StyleOut:
    return s.StyleOut.model_validate(user_style(principal=principal))


def ask_oracle(principal: Principal, args: s.OracleIn) -> s.OracleOut:
    return s.OracleOut.model_validate(oracle_ask(principal=principal, question=args.question,
                                                 project_id=args.projectId))


def log_event(principal: Principal, args: s.LogEventIn) -> s.LogEventOut:
    event = session_event_record(principal=principal, session_id=args.sessionId, event_type=args.eventType,
                                 payload=args.payload)
    return s.LogEventOut(id=str(event.id), accepted=True)


def find_skill(principal: Principal, args: s.FindSkillIn) -> s.FindSkillOut:
    return s.FindSkillOut.model_validate(skills_find(principal=principal, query=args.query, limit=args.limit))


def session_search(principal: Principal, args: s.SessionSearchIn) -> s.SessionSearchOut:
    found = sessions_find(principal=principal, query=args.query, since=args.since, until=args.until,
                          limit=args.limit)
    return s.SessionSearchOut.model_validate(found)
