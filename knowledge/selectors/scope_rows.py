"""Whether each scope's kept size (`knowledge.models.ScopeRows`) matches its rows: what `brain doctor` reports and
`knowledge.services.scope_rows` corrects."""

from __future__ import annotations

from django.db import connection

from knowledge.models import KnowledgeItem, ScopeRows


def actual_rows_cte() -> str:
    """`actual (scope, rows)`: every scope's retrievable rows, counted from the table under the triggers' condition."""
    return f"""actual AS (
            SELECT knowledge_scope_key(project_id, owner_id) AS scope, count(*) AS rows
            FROM {KnowledgeItem._meta.db_table}
            WHERE knowledge_scope_counted(deleted_at, superseded_by_id, type, decay_score, review_status)
            GROUP BY 1)"""  # noqa: S608 - the table name from the model


def scope_rows_differing() -> tuple[int, int]:
    """(scopes whose kept size differs from their rows, scopes in all). One grouped read of the knowledge table."""
    kept = ScopeRows._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"""WITH {actual_rows_cte()}
            SELECT count(*) FILTER (WHERE coalesce(k.rows, 0) <> coalesce(a.rows, 0)), count(a.scope)
            FROM actual a FULL JOIN {kept} k ON k.scope = a.scope""")  # noqa: S608
        differing, scopes = cursor.fetchone()
    return int(differing), int(scopes)


def scope_rows_health() -> tuple[bool, str]:
    """For `brain doctor`: failing while a scope's kept size differs from its rows, with the fix."""
    differing, scopes = scope_rows_differing()
    if not differing:
        return True, f"the kept size of each of {scopes} scope(s) matches its rows"
    return False, (f"{differing} scope(s) hold a kept size other than their rows (a write bypassed the triggers, such "
                   "as a data-only restore with --disable-triggers), so their searches weigh terms by a wrong row "
                   "count: run `brain knowledge recount` (the nightly knowledge-scope-rows task does it too)")
