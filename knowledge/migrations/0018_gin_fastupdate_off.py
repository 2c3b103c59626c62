"""The knowledge table's GIN indexes write every entry into the index itself (`fastupdate = off`).

With PostgreSQL's default, a write appends its entries to the index's pending list, and every search reads that whole
list until a vacuum, or a write that finds it over `gin_pending_list_limit` (4 MB), merges it into the index. Every
write adds to it: a taught row, its vector when the batcher stores it, a confidence or decay update that cannot stay
HOT. At 100,000 rows, 5,000 rows written since the last vacuum took an open's full-text statement from 4.5 to 10 ms
p50 (docs/benchmarks.md, issue 17, thirty-seventh pass). Writing the entries directly cost a single-row insert at
most 0.25 ms, within the host's noise in two runs of three.

Turning the option off leaves the entries already pending where they are, so they are merged here as well.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

INDEXES = ("knowledge_search_gin", "knowledge_tags_gin")


def _each(statement: str) -> str:
    return "; ".join(statement.format(name=name) for name in INDEXES)


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0017_scope_rows"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(_each("ALTER INDEX {name} SET (fastupdate = off)"),
                                  reverse_sql=_each("ALTER INDEX {name} SET (fastupdate = on)")),
                migrations.RunSQL(_each("SELECT gin_clean_pending_list('{name}')"), reverse_sql=migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="knowledgeitem", name="knowledge_search_gin"),
                migrations.RemoveIndex(model_name="knowledgeitem", name="knowledge_tags_gin"),
                migrations.AddIndex(model_name="knowledgeitem", index=GinIndex(
                    fields=["search_vector"], name="knowledge_search_gin", fastupdate=False)),
                migrations.AddIndex(model_name="knowledgeitem", index=GinIndex(
                    fields=["tags"], name="knowledge_tags_gin", fastupdate=False)),
            ],
        ),
    ]
