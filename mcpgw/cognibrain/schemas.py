"""Input and output models of the nine Cognibrain tools: the spec's names, arguments and defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from knowledge.guard_models import GUARD_ACTION_MAX
from mcpgw.registry import ToolModel

TASK_MAX = 4000
MAX_BUDGET = 32000
COMMAND_MAX = 2000
# A path as long as Linux allows one (PATH_MAX); each file is matched against the project's globs, so its length is
# the matcher's work as much as the list's.
FilePath = Annotated[str, Field(max_length=4096)]
Command = Annotated[str, Field(max_length=COMMAND_MAX)]


class ContextIn(ToolModel):
    task: str = Field(min_length=1, max_length=TASK_MAX, description="Description of the task to get context for")
    repo: str | None = Field(default=None, max_length=200, description="Repository identifier (owner/name)")
    token_budget: int = Field(default=1200, ge=1, le=MAX_BUDGET, description="Maximum tokens to return")


class ContextOut(ToolModel):
    context: str
    memories_used: int
    token_count: int


class CodingContextIn(ToolModel):
    task: str = Field(min_length=1, max_length=TASK_MAX, description="Current coding task")
    files: list[FilePath] = Field(default_factory=list, max_length=500, description="Files being edited")


class ScopedText(ToolModel):
    content: str
    scope: Literal["repo", "user", "global", "task"]


class CodingContextOut(ToolModel):
    corrections: list[ScopedText]
    conventions: list[ScopedText]


class GuardIn(ToolModel):
    action: str = Field(min_length=1, max_length=GUARD_ACTION_MAX,
                        description="The action to check (command or file edit)")


class GuardOut(ToolModel):
    allowed: bool
    warnings: list[str]
    blockers: list[str]


class MemoryAddIn(ToolModel):
    content: str = Field(min_length=1, max_length=4000, description="Memory content to store")
    scope: Literal["repo", "user", "global", "task"] = "repo"


class MemoryAddOut(ToolModel):
    id: str
    stored: bool


class CorrectionIn(ToolModel):
    text: str = Field(min_length=1, max_length=4000, description="The correction from the human operator")


class StoredItem(ToolModel):
    id: str
    type: str
    content: str


class CorrectionOut(ToolModel):
    event_id: str
    stored: list[StoredItem]
    superseded: list[str]


class PatchEvidenceIn(ToolModel):
    task: str = Field(min_length=1, max_length=TASK_MAX, description="Task that was completed")
    files: list[FilePath] = Field(default_factory=list, max_length=500, description="Files that were modified")
    commands: list[Command] = Field(default_factory=list, max_length=200, description="Commands that were executed")


class PatchEvidenceOut(ToolModel):
    evidence_id: str
    recorded: bool


class HealthOut(ToolModel):
    status: Literal["healthy", "degraded"]
    memory_count: int
    stale_candidates: int
    last_dream_cycle: datetime | None
    degraded: list[Literal["database", "broker", "embedder"]] = Field(
        description="the parts that fail their check; empty when healthy")


class OutcomeIn(ToolModel):
    command: str = Field(min_length=1, max_length=COMMAND_MAX, description="Command that was run")
    exit_code: int = Field(ge=-1_000_000, le=1_000_000, description="Exit code (0 = success)")
    stderr: str = Field(default="", max_length=100_000, description="Standard error output (on failure)")


class OutcomeOut(ToolModel):
    recorded: bool
    event_id: str
    tool_outcome_memory_id: str | None = Field(description="set when this failure repeated and became a memory")
    alternative_for: str | None = Field(description="the tool-outcome memory this success is now the alternative of")


class SessionEndIn(ToolModel):
    run_dream_if_due: bool = Field(default=False, description="Trigger dream cycle if enough time has passed")


class SessionEndOut(ToolModel):
    session_id: str | None = Field(description="null when no session was open")
    closed: bool
    sqs: int | None
    dream_queued: bool
    dream_reason: str | None
