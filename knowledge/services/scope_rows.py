"""Recounting the kept size of every scope (`knowledge.models.ScopeRows`) from the rows themselves.

Triggers keep the counts in every writing transaction, but a write that bypasses triggers (a data-only restore run
with `--disable-triggers`, replication with `session_replication_role = replica`) would leave them wrong, and with
them BM25's row count and the choice between exact and walked search. The nightly recount (and `brain knowledge
recount`) puts every scope back to its rows, removes scopes left with none, and logs a warning naming how many it
corrected; `brain doctor` reports scopes that differ.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from brain.logs import log_op
from knowledge.models import KnowledgeItem, ScopeRows
from knowledge.selectors.scope_rows import actual_rows_cte

logger = logging.getLogger(__name__)

# How long the recount waits for the writers ahead of it before giving up (its task retries later).
LOCK_WAIT = "5s"


def _recount_sql() -> str:
    kept = ScopeRows._meta.db_table
    return f"""
        WITH {actual_rows_cte()},
        fixed AS (
            INSERT INTO {kept} AS c (scope, rows)
            SELECT a.scope, a.rows FROM actual a LEFT JOIN {kept} k ON k.scope = a.scope
            WHERE k.rows IS DISTINCT FROM a.rows ORDER BY a.scope
            ON CONFLICT (scope) DO UPDATE SET rows = EXCLUDED.rows RETURNING 1),
        gone AS (
            DELETE FROM {kept} c WHERE NOT EXISTS (SELECT 1 FROM actual a WHERE a.scope = c.scope) RETURNING c.rows)
        SELECT (SELECT count(*) FROM fixed), (SELECT count(*) FROM gone WHERE rows <> 0), (SELECT count(*) FROM gone)
    """  # noqa: S608 - table names from the models


def scope_rows_recount() -> int:
    """Puts every scope's kept count back to its rows; returns how many scopes were wrong. Writers to the knowledge
    table wait for it (a SHARE lock, one grouped read of the table: a write that slipped between the read and the
    correction would otherwise be lost from its scope's count)."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
        cursor.execute(f"LOCK TABLE {KnowledgeItem._meta.db_table} IN SHARE MODE")
        cursor.execute(_recount_sql())
        fixed, emptied, removed = cursor.fetchone()
    wrong = int(fixed) + int(emptied)
    log_op(logger, "knowledge.scope_rows_recounted", level=logging.WARNING if wrong else logging.INFO,
           corrected=wrong, removed=int(removed))
    return wrong
