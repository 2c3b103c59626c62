"""BM25's row length (its token count) stored beside the tsvector, for the knowledge table.

The full-text list scores each candidate by Okapi BM25, which needs the row's length in tokens. Counted at query
time, that unnested every candidate's whole tsvector: at 100,000 rows about half of the full-text list's time
(docs/benchmarks.md). `brain_tsvector_tokens` sums a tsvector's position counts (a lexeme without positions
counts once), exactly what the query summed. A generated column may not read another generated column, so
`search_tokens` repeats the `search_vector` expression. Adding it rewrites the table and rebuilds its indexes
once, under an exclusive lock (the HNSW graph too: about two minutes for a million rows on two cores).
"""

from django.db import migrations, models

import knowledge.models

FUNCTION = """
CREATE OR REPLACE FUNCTION brain_tsvector_tokens(tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest($1) u $$
"""


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0014_knowledge_fillfactor")]

    operations = [
        migrations.RunSQL(FUNCTION, "DROP FUNCTION IF EXISTS brain_tsvector_tokens(tsvector)"),
        migrations.AddField(
            model_name="knowledgeitem",
            name="search_tokens",
            field=models.GeneratedField(
                db_persist=True,
                expression=knowledge.models.search_tokens(knowledge.models._search_vector()),
                output_field=models.IntegerField(),
            ),
        ),
    ]
