"""brain_start_session, brain_retrieve_knowledge, brain_report_session_outcome, brain_log_event,
brain_session_search: each one service or selector call (the REST API and dashboard call the same)."""

from __future__ import annotations

from mcpgw import schemas_brain as s
from mcpgw.idempotent import once
from mcpgw.registry import tool
from projects.scope import Principal
from sessions.selectors.search import sessions_find
from sessions.services.events import session_event_record
from sessions.services.open import session_open
from sessions.services.outcome import OutcomeReport, session_report_outcome
from sessions.services.retrieve import knowledge_retrieve


@tool(
    title="Start a session",
    description=(
        "Call once when a coding task begins and keep the returned sessionId. Pass the task as `prompt` to get "
        "relevantKnowledge (rules to apply now, ids to report back as knowledgeUsed) in the same call. The "
        "project is the token's, else projectId, else projectName (found or created), else the first project."
    ),
    read_only=False, idempotent=False,
)
def brain_start_session(principal: Principal, args: s.StartSessionIn) -> s.StartSessionOut:
    return once(principal, "brain_start_session", args, s.StartSessionOut, lambda: s.StartSessionOut.from_result(
        session_open(
            principal=principal, client_type=args.client_type, prompt=args.prompt, framework=args.framework,
            language=args.language, project_id=args.project_id, project_name=args.project_name,
        )))


@tool(
    title="Retrieve knowledge",
    description=(
        "Call before generating code, or again mid-task when the work changes direction: returns the ranked "
        "items (with scores and why) and an injection text cut to the token budget. With context.sessionId "
        "the injected ids are recorded on that session for the confidence loop."
    ),
    read_only=False, idempotent=True,
)
def brain_retrieve_knowledge(principal: Principal, args: s.RetrieveIn) -> s.RetrieveOut:
    ctx = args.context or s.RetrieveContext.model_validate({})
    return s.RetrieveOut.from_result(knowledge_retrieve(
        principal=principal, prompt=args.prompt, session_id=ctx.session_id, project_id=ctx.project_id,
        framework=ctx.framework, language=ctx.language, limit=args.limit, budget_tokens=args.budget_tokens,
    ))


@tool(
    title="Report the session outcome",
    description=(
        "Call when the user accepted or rejected the work: closes the session, scores it (sqs 0-100), credits "
        "or debits the knowledge used, stores up to 5 learnings {trigger, rule, rationale, type, source, "
        "confidence} and retires resolvedActionItemIds. Retrying is safe (alreadyClosed). Act on `hint`."
    ),
    read_only=False, idempotent=True,
)
def brain_report_session_outcome(principal: Principal, args: s.ReportIn) -> s.ReportOut:
    report = OutcomeReport(
        success=args.success, user_feedback=args.user_feedback, build_attempts=args.build_attempts,
        errors=args.errors, files_created=args.files_created, files_modified=args.files_modified,
        files_rejected=args.files_rejected, knowledge_used=args.knowledge_used, learnings=args.learnings,
        resolved_action_item_ids=args.resolved_action_item_ids, summary=args.summary,
    )
    return s.ReportOut.from_result(
        session_report_outcome(principal=principal, session_id=args.session_id, report=report))


@tool(
    title="Log a session event",
    description=(
        "Call during an open session for things worth learning from: user_correction, file_rejected, "
        "file_accepted, knowledge_rejected, knowledge_applied, build, test, error, tool_use, decision, note. "
        "payload is a small JSON object (16 KB at most)."
    ),
    read_only=False, idempotent=False,
)
def brain_log_event(principal: Principal, args: s.LogEventIn) -> s.LogEventOut:
    def run() -> s.LogEventOut:
        event = session_event_record(principal=principal, session_id=args.session_id, event_type=args.event_type,
                                     payload=args.payload)
        return s.LogEventOut.model_validate({"id": str(event.id), "accepted": True})

    return once(principal, "brain_log_event", args, s.LogEventOut, run)


@tool(
    title="Search past sessions",
    description=(
        "Answers \"what did I do last week?\": the caller's own sessions ranked by their prompts and events, "
        "with matching snippets and dates; since/until (ISO 8601) narrow the window."
    ),
    read_only=True,
)
def brain_session_search(principal: Principal, args: s.SessionSearchIn) -> s.SessionSearchOut:
    return s.SessionSearchOut.from_result(sessions_find(
        principal=principal, query=args.query, since=args.since, until=args.until, limit=args.limit))
