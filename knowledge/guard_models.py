"""Guard rules, guard decisions and dream-cycle runs (the Cognibrain surface).

A guard rule is a knowledge item of type `guard` (its text says what is forbidden and why) plus one
`GuardPattern` that makes it checkable without a model: a command prefix or regex, a path glob, a lock
file name or a generated-file marker, with a severity. Imported by `knowledge.models`.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from brain.models import TimestampedModel

GUARD_PATTERN_MAX = 300
GUARD_ACTION_MAX = 2000


class GuardKind(models.TextChoices):
    COMMAND_PREFIX = "command_prefix", "Command prefix"
    COMMAND_REGEX = "command_regex", "Command regex"
    COMMAND_EXACT = "command_exact", "Exact command (tool outcome)"
    PATH_GLOB = "path_glob", "Path glob"
    LOCK_FILE = "lock_file", "Lock file"
    GENERATED_MARKER = "generated_marker", "Generated-file marker"


class GuardSeverity(models.TextChoices):
    BLOCK = "block", "Block"
    WARN = "warn", "Warn"


class GuardPattern(TimestampedModel):
    knowledge = models.OneToOneField("knowledge.KnowledgeItem", on_delete=models.CASCADE, related_name="guard")
    kind = models.CharField(max_length=20, choices=GuardKind.choices)
    pattern = models.CharField(max_length=GUARD_PATTERN_MAX)
    severity = models.CharField(max_length=8, choices=GuardSeverity.choices, default=GuardSeverity.BLOCK)
    # The stored correct way (e.g. "edit src/ and run the build"); for tool outcomes, the command that worked.
    alternative = models.TextField(blank=True)


class GuardDecision(TimestampedModel):
    """One answer of cognibrain_guard, kept for the dashboard and for auditing what the agent was told."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("projects.Project", null=True, blank=True, on_delete=models.CASCADE,
                                related_name="+")
    action = models.TextField()
    allowed = models.BooleanField()
    warnings = models.JSONField(default=list, blank=True)
    blockers = models.JSONField(default=list, blank=True)
    rule_ids = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="guard_decision_owner_recent")]


class DreamRun(TimestampedModel):
    """When the dream cycle was queued for one scope (`project:<uuid>` or `owner:<uuid>`)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    scope = models.CharField(max_length=60)
    reason = models.CharField(max_length=40)
    # The run is its own outbox: it commits with the session end, and its three jobs are sent afterwards.
    # enqueued_at stays empty while the broker is unreachable (a beat sweep sends it later); each job
    # stamps its own *_at in the transaction that writes its result, so a re-sent message runs it once.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    evolved_at = models.DateTimeField(null=True, blank=True)
    decayed_at = models.DateTimeField(null=True, blank=True)
    crossed_at = models.DateTimeField(null=True, blank=True)  # the owner's cross-session extract
    # Stamped once by the requeue sweep when the run aged past the re-send window with a job unfinished: its
    # work falls to the scope's next cycle, and the sweep says so in the log.
    abandoned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["scope", "-created_at"], name="dream_run_scope_recent")]


class GuardRuleVersion(models.Model):
    """A counter per scope (`project:<uuid>`, or `owner:<uuid>` for an owner's project-less rules) that
    database triggers bump whenever a guard rule of that scope is added, changed or removed (migration
    0009_j14_guard_rule_version). The guard's compiled-rule cache compares it (two primary-key reads) instead
    of aggregating every rule on each check."""

    scope = models.CharField(max_length=60, primary_key=True)
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.scope} v{self.version}"


class GuardCalibration(TimestampedModel):
    """One run of `brain guard calibrate`: the semantic guard's threshold chosen for one embedding model from
    the cosine similarities of labelled (forbidden action, planned action) pairs. The guard uses the newest
    row of the model it embeds with, unless BRAIN_GUARD_SEMANTIC_THRESHOLD overrides it."""

    embedding_model = models.CharField(max_length=200)
    threshold = models.FloatField()
    source = models.CharField(max_length=80, help_text="builtin, or the scope whose stored forbidden actions")
    matches = models.PositiveIntegerField()
    non_matches = models.PositiveIntegerField()
    true_positive_rate = models.FloatField()
    false_positive_rate = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["embedding_model", "-created_at"], name="guard_calibration_recent")]

    def __str__(self) -> str:
        return f"{self.embedding_model}: {self.threshold:.3f} ({self.source})"
