"""The nine Cognibrain tools: each resolves the caller's current session and calls one service or selector."""

from __future__ import annotations

from knowledge.nightly import NightlyScope
from knowledge.services.guard import guard_decide
from mcpgw.cognibrain import schemas as s
from mcpgw.cognibrain.registry import cognibrain_tool
from mcpgw.registry import NoArguments
from projects.scope import Principal
from sessions.selectors.cognibrain import coding_context, health_of
from sessions.services.cognibrain import correction_record, memory_add, outcome_record, patch_evidence_record
from sessions.services.context_pack import context_pack
from sessions.services.current import (
    in_current_session,
    session_current,
    session_current_end,
    session_current_open,
)
from sessions.services.dream import dream_queue_if_due


@cognibrain_tool(title="Context pack", read_only=False, idempotent=True, description=(
    "Before acting: a compact pack of what fits the task (forbidden actions and repo policies, procedures, "
    "previous corrections, known pitfalls, decisions, commands) within tokenBudget, counted by a real tokenizer."))
def cognibrain_context(principal: Principal, args: s.ContextIn) -> s.ContextOut:
    session = session_current(principal=principal, repo=args.repo)
    pack = context_pack(principal=principal, session=session, task=args.task, budget=args.token_budget)
    return s.ContextOut(context=pack.context, memories_used=len(pack.ids), token_count=pack.token_count)


@cognibrain_tool(title="Coding context", read_only=True, description=(
    "Corrections and conventions for the files being edited (path globs stored on items, language by "
    "extension) and the task."))
def cognibrain_coding_context(principal: Principal, args: s.CodingContextIn) -> s.CodingContextOut:
    session = session_current(principal=principal)
    found = coding_context(principal=principal, session=session, task=args.task, files=args.files)
    return s.CodingContextOut.model_validate({
        "corrections": [{"content": c, "scope": sc} for c, sc in found.corrections],
        "conventions": [{"content": c, "scope": sc} for c, sc in found.conventions],
    })


@cognibrain_tool(title="Guard an action", read_only=False, idempotent=True, description=(
    "Before a shell command or file edit: guard rules (command prefix/regex, path glob, lock file, generated "
    "marker) block or warn; stored forbidden actions close in meaning warn. Each blocker names its rule and "
    "the stored alternative."))
def cognibrain_guard(principal: Principal, args: s.GuardIn) -> s.GuardOut:
    session = session_current(principal=principal)
    verdict = guard_decide(owner=principal.user, project=session.project, action=args.action)
    return s.GuardOut(allowed=verdict.allowed, warnings=verdict.warnings, blockers=verdict.blockers)


@cognibrain_tool(title="Add a memory", read_only=False, idempotent=True, description=(
    "Stores a durable memory: scope repo (this project), user (you, everywhere), global (tagged org-wide), "
    "task (this session only). A near-duplicate returns the existing id with stored=false. \"Never edit "
    "dist/** ...\" stated as a repo memory becomes a guard rule."))
def cognibrain_memory_add(principal: Principal, args: s.MemoryAddIn) -> s.MemoryAddOut:
    added = in_current_session(principal, lambda session: memory_add(
        principal=principal, session=session, content=args.content, scope=args.scope))
    return s.MemoryAddOut(id=str(added.id), stored=added.stored)


@cognibrain_tool(title="Record a correction", read_only=False, idempotent=False, description=(
    "A human correction: stored as a user_correction of the current session; \"not X, use Y\" also stores "
    "the forbidden action and the procedure, superseding rules that recommended X."))
def cognibrain_correction(principal: Principal, args: s.CorrectionIn) -> s.CorrectionOut:
    done = in_current_session(principal, lambda session: correction_record(session=session, text=args.text))
    return s.CorrectionOut.model_validate({
        "eventId": str(done.event.id), "superseded": [str(i) for i in done.superseded],
        "stored": [{"id": str(i.id), "type": i.type, "content": i.content} for i in done.stored],
    })


@cognibrain_tool(title="Record patch evidence", read_only=False, idempotent=False, description=(
    "After a change: the task, files changed and commands run, with the memories injected so far."))
def cognibrain_patch_evidence(principal: Principal, args: s.PatchEvidenceIn) -> s.PatchEvidenceOut:
    event = in_current_session(principal, lambda session: patch_evidence_record(
        session=session, task=args.task, files=args.files, commands=args.commands))
    return s.PatchEvidenceOut(evidence_id=str(event.id), recorded=True)


@cognibrain_tool(title="Health", read_only=True, description=(
    "Your memory's health: status, memoryCount, staleCandidates, lastDreamCycle and which part is degraded."))
def cognibrain_health(principal: Principal, args: NoArguments) -> s.HealthOut:
    found = health_of(principal=principal)
    return s.HealthOut.model_validate({
        "status": found.status, "memoryCount": found.memory_count, "staleCandidates": found.stale_candidates,
        "lastDreamCycle": found.last_dream_cycle, "degraded": found.degraded,
    })


@cognibrain_tool(title="Record a command outcome", read_only=False, idempotent=False, description=(
    "After running a command: its exit code and stderr. The same command failing twice with similar stderr "
    "becomes a memory the guard warns with; a later success of another command becomes its alternative."))
def cognibrain_outcome(principal: Principal, args: s.OutcomeIn) -> s.OutcomeOut:
    done = in_current_session(principal, lambda session: outcome_record(
        session=session, command=args.command, exit_code=args.exit_code, stderr=args.stderr))
    return s.OutcomeOut(recorded=True, event_id=str(done.event.id),
                        tool_outcome_memory_id=str(done.memory_id) if done.memory_id else None,
                        alternative_for=str(done.alternative_for) if done.alternative_for else None)


@cognibrain_tool(title="End the session", read_only=False, idempotent=True, description=(
    "Closes the current session (scored and learned from like brain_report_session_outcome). With "
    "runDreamIfDue, queues the dream cycle (evolution, decay, cross-session) when due, at most once per scope "
    "per hour."))
def cognibrain_session_end(principal: Principal, args: s.SessionEndIn) -> s.SessionEndOut:
    session = session_current_open(principal=principal)
    if session is None:
        return s.SessionEndOut(session_id=None, closed=False, sqs=None, dream_queued=False, dream_reason=None)
    ended = session_current_end(principal=principal, session=session)
    dream = None
    if args.run_dream_if_due:
        scope = NightlyScope(project_id=session.project_id, owner_id=None)
        dream = dream_queue_if_due(owner=principal.user, scope=scope)
    return s.SessionEndOut(session_id=str(session.id), closed=not ended.closed.already_closed,
                           sqs=ended.closed.scores.sqs, dream_queued=bool(dream and dream.due),
                           dream_reason=dream.reason if dream else None)
