"""The caller of a request: a user, optionally narrowed to one project by a project-scoped token."""

from __future__ import annotations

from dataclasses import dataclass

from projects.models import ApiToken, Project, User


@dataclass(frozen=True)
class Principal:
    user: User
    token: ApiToken | None = None
    # An opaque key of the transport session this call arrived on (a digest of the MCP Mcp-Session-Id in the
    # handshake era); blank for stateless calls. Per-connection state (the Cognibrain current session) keys on it.
    binding: str = ""
    # The projects this principal sees, in projects_visible's order, when the call's authentication read them in
    # its own round trip (read-only tools that list them; mcpgw.session_call); None: read them when needed.
    listed: tuple[Project, ...] | None = None
    # The first of those projects (none, or one) when the call's authentication read only that (a session opened in
    # the default project, mcpgw.session_call); None: read it when needed.
    listed_first: tuple[Project, ...] | None = None

    @property
    def token_project(self) -> Project | None:
        return self.token.project if self.token is not None else None

    @property
    def is_project_scoped(self) -> bool:
        return self.token is not None and self.token.project_id is not None

    @property
    def reads_personal(self) -> bool:
        """Whether reads include the user's own project-less rows: not for a project-scoped token, whose reads are
        narrowed to its project as its writes are (the spec's authorization matrix)."""
        return not self.is_project_scoped
