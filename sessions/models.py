"""Agent sessions and the events logged during them (searchable like knowledge)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import F, Q
from django.db.models.fields.json import KeyTransform
from pgvector.django import HnswIndex, VectorField

from brain.models import TimestampedModel
from knowledge.models import EMBEDDING_DIMENSIONS, TS_CONFIG, search_tokens
from projects.models import STACK_NAME_MAX

# Field limits, named once: the services and the MCP schemas read these.
CLIENT_TYPE_MAX = 60
BINDING_MAX = 64
EVENT_TYPE_MAX = 40

PROMPT_PREVIEW_CHARS = 240


class Session(TimestampedModel):
    """One coding task of one agent. Outcome fields stay null until the session is closed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="agent_sessions")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="agent_sessions")
    client_type = models.CharField(max_length=CLIENT_TYPE_MAX, blank=True)
    prompt = models.TextField(blank=True)
    framework = models.CharField(max_length=STACK_NAME_MAX, blank=True)
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    success = models.BooleanField(null=True, blank=True)
    user_feedback = models.CharField(max_length=8, blank=True)
    quality_score = models.PositiveSmallIntegerField(null=True, blank=True)
    outcome = models.JSONField(null=True, blank=True, help_text="the outcome report as received")
    # The transport session an implicit (Cognibrain) session is bound to: Principal.binding, an opaque digest.
    binding = models.CharField(max_length=BINDING_MAX, blank=True, default="")

    class Meta:
        ordering = ["-started_at"]
        indexes = [
            models.Index(fields=["user", "project", "-started_at"], name="session_user_project_started"),
            models.Index(fields=["user", "-started_at"], name="session_user_started"),
            models.Index(fields=["binding"], name="session_open_binding",
                         condition=models.Q(ended_at__isnull=True) & ~models.Q(binding="")),
        ]

    def __str__(self) -> str:
        return f"session {self.id} ({self.client_type or 'client'})"

    @property
    def is_open(self) -> bool:
        return self.ended_at is None

    @property
    def prompt_preview(self) -> str:
        """The start of the prompt, as lists of sessions show it."""
        return self.prompt[:PROMPT_PREVIEW_CHARS]


class SessionEvent(TimestampedModel):
    """Something that happened in a session. `user` and `project` repeat the session's so that search
    can scope events in one index-friendly WHERE clause without a join."""

    # Every read of events by session or by user goes through the composite indexes below, which lead with those
    # columns; single-column indexes on them (Django's default for a foreign key) and on `created_at` (which no
    # query filters events by) only cost each event's insert and its vector's update three more index entries.
    created_at = models.DateTimeField(auto_now_add=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events", db_index=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    event_type = models.CharField(max_length=EVENT_TYPE_MAX)
    payload = models.JSONField(default=dict, blank=True)
    content = models.TextField(blank=True, help_text="the searchable text of the event")
    occurred_at = models.DateTimeField()
    # Its place in the session, 0 first, in logging order (events of one batch share `occurred_at`). Session
    # search scores a turn with its neighbours' words (knowledge/search.py, `Fusion.fts_neighbours`). Two events
    # logged at the same instant into one session may share a position; None: its session's order is unknown.
    position = models.IntegerField(null=True, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    embedding_model = models.CharField(max_length=120, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config=TS_CONFIG), output_field=SearchVectorField(), db_persist=True
    )
    search_tokens = models.GeneratedField(  # BM25's row length (knowledge.models.search_tokens)
        expression=search_tokens(SearchVector("content", config=TS_CONFIG)), output_field=models.IntegerField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["occurred_at", "created_at"]
        indexes = [
            models.Index(fields=["session", "occurred_at"], name="event_session_occurred"),
            models.Index(fields=["session", "position"], name="event_session_position"),
            models.Index(fields=["user", "project"], name="event_user_project"),
            # A failing command's earlier failures (cognibrain_outcome looks them up on every failure): only failed
            # command outcomes are in it, so another event's insert pays for the predicate alone. Without it the
            # lookup scanned the table (19.5 ms at 76,000 events; docs/benchmarks.md, twentieth pass).
            models.Index(F("user"), F("project"), KeyTransform("command", "payload"), F("occurred_at").desc(),
                         name="event_failed_command",
                         condition=Q(event_type="error", payload__kind="command_outcome")),
            GinIndex(fields=["search_vector"], name="event_search_gin", fastupdate=False),  # no pending list (0010)
            HnswIndex(
                name="event_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} in {self.session_id}"


class ApplicationRole(models.TextChoices):
    INJECTED = "injected", "Injected"
    USED_REPORTED = "used_reported", "Reported as used"


class SessionKnowledgeApplication(TimestampedModel):
    """A knowledge row that reached a session: injected by the brain or reported used by the agent.

    One row per (session, knowledge, role), so a retried call records nothing twice. `outcome` is
    set when the session closes (True success, False failure)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="applications")
    knowledge = models.ForeignKey("knowledge.KnowledgeItem", on_delete=models.CASCADE, related_name="applications")
    role = models.CharField(max_length=16, choices=ApplicationRole.choices)
    outcome = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "knowledge", "role"], name="application_unique_role"),
        ]
        indexes = [models.Index(fields=["knowledge", "role"], name="application_knowledge_role")]

    def __str__(self) -> str:
        return f"{self.role} {self.knowledge_id} in {self.session_id}"


class JobStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class SessionJob(TimestampedModel):
    """A background job owed to a closed session (extract, autoskill), recorded in the close transaction.

    The row is the truth, the broker message only a wake-up: a worker claims the row with a conditional
    UPDATE (a fresh claim token), writes its result and marks the row done in one transaction that checks
    the token, so a redelivered or re-enqueued message can never produce a second result."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="jobs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=20)
    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claim = models.UUIDField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=30, blank=True)
    items = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "name"], name="session_job_unique")]
        indexes = [models.Index(fields=["status", "enqueued_at"], name="session_job_status")]

    def __str__(self) -> str:
        return f"{self.name} of {self.session_id} ({self.status})"


class CrossSessionCursor(TimestampedModel):
    """Where the daily cross-session extract stopped for one user: sessions that ended after it are new."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    last_ended_at = models.DateTimeField(null=True, blank=True)
    last_run_on = models.DateField(null=True, blank=True)
