"""Each knowledge row's vector signs (`embedding_bits`, written by PostgreSQL from the vector) and the index an exact
vector list reads its candidates from (`knowledge_vector_scope`: the rows that may be retrieved, by project, with the
columns that list reads). A project of 5,000 rows among 105,000 had its vector list read every row and its vector
or walk the HNSW index (a fusion statement of 8-10 ms, and 96 of 150 searches ranking other hits than the exact
list); with the index's candidates it takes 4.3-5.8 ms (docs/benchmarks.md, issue 17, thirty-ninth pass).

Adding a stored generated column rewrites the table once: about 30 s for 100,000 rows on two cores. The bits come from
pgvector's `binary_quantize` (0.7 and later); an older extension stops the migration with what to run, before anything
changes.
"""

from typing import Any

import django.db.models.functions.comparison
import pgvector.django.bit
from django.conf import settings
from django.db import migrations, models

PGVECTOR_LEAST = (0, 7)


def pgvector_refusal(version: str) -> str:
    """Why this migration cannot run on pgvector `version`, or "" when it can."""
    try:
        have = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        return ""  # a build whose version does not parse: let PostgreSQL say whether binary_quantize exists
    if have >= PGVECTOR_LEAST:
        return ""
    return (f"knowledge 0019 needs pgvector 0.7 or newer (binary_quantize); this database has {version}. Install a "
            "newer pgvector on the server, run ALTER EXTENSION vector UPDATE, then migrate again.")


def _check_pgvector(apps: Any, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    refusal = pgvector_refusal(row[0]) if row else ""
    if refusal:
        raise RuntimeError(refusal)


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0018_gin_fastupdate_off'),
        ('projects', '0007_user_email_confirmed_at'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(_check_pgvector, migrations.RunPython.noop, elidable=True),
        migrations.AddField(
            model_name='knowledgeitem',
            name='embedding_bits',
            field=models.GeneratedField(db_persist=True, expression=django.db.models.functions.comparison.Cast(models.Func(models.F('embedding'), function='binary_quantize', output_field=pgvector.django.bit.BitField(length=384)), output_field=pgvector.django.bit.BitField(length=384)), output_field=pgvector.django.bit.BitField(length=384)),
        ),
        migrations.AddIndex(
            model_name='knowledgeitem',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('embedding__isnull', False), ('superseded_by__isnull', True), models.Q(('type', 'action_item'), _negated=True)), fields=['project'], include=('id', 'owner', 'embedding_model', 'embedding_bits'), name='knowledge_vector_scope'),
        ),
    ]
