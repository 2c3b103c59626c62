"""MCP sessions of the handshake era. Rows, not process memory, so any web replica serves any session."""

from __future__ import annotations

import hashlib

from django.db import models

# Field limits, named once: the services and selectors read these.
SESSION_ID_MAX = 64
CLIENT_NAME_MAX = 200
CLIENT_VERSION_MAX = 100


class McpSession(models.Model):
    """One `Mcp-Session-Id`, bound to the token that opened it."""

    # The session id itself: 43 random URL-safe characters (256 bits), visible ASCII as the spec asks.
    id = models.CharField(primary_key=True, max_length=SESSION_ID_MAX, editable=False)
    token = models.ForeignKey("projects.ApiToken", on_delete=models.CASCADE, related_name="mcp_sessions")
    protocol_version = models.CharField(max_length=20)
    client_name = models.CharField(max_length=CLIENT_NAME_MAX, blank=True)
    client_version = models.CharField(max_length=CLIENT_VERSION_MAX, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    tool_call_count = models.PositiveIntegerField(default=0)
    closed_at = models.DateTimeField(null=True, blank=True)
    close_reason = models.CharField(max_length=20, blank=True)  # deleted | idle | evicted

    class Meta:
        # Every tool call updates `last_seen_at` and the call count. With neither in an index that update is HOT (a
        # new row version on the same page, no index entry), so a call writes the row and nothing else; the
        # table leaves half of each page free for those versions (migration 0002). A token's open sessions are
        # few, so ordering them by `last_seen_at` needs no index.
        indexes = [models.Index(fields=["token", "closed_at"], name="mcpsession_token_open")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.protocol_version})"

    @property
    def binding(self) -> str:
        """The key per-connection state is bound to (Principal.binding): a digest, so the id itself, a
        bearer-like secret, is stored nowhere else."""
        return hashlib.sha256(f"mcp-session:{self.id}".encode()).hexdigest()[:48]

    @property
    def prefix(self) -> str:
        """What logs show: never the whole id, which is a bearer-like secret."""
        return self.id[:8]
