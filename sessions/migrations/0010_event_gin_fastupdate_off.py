"""The events' full-text index writes every entry into the index itself (`fastupdate = off`), as the knowledge
table's do (knowledge/migrations/0018_gin_fastupdate_off.py): with the pending list every session search read all
events written since the last vacuum, and the event whose insert found the list over 4 MB merged it inside its
request."""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations

INDEX = "event_search_gin"


class Migration(migrations.Migration):

    dependencies = [
        ("agent_sessions", "0009_event_failed_command"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(f"ALTER INDEX {INDEX} SET (fastupdate = off)",
                                  reverse_sql=f"ALTER INDEX {INDEX} SET (fastupdate = on)"),
                migrations.RunSQL(f"SELECT gin_clean_pending_list('{INDEX}')", reverse_sql=migrations.RunSQL.noop),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="sessionevent", name=INDEX),
                migrations.AddIndex(model_name="sessionevent", index=GinIndex(
                    fields=["search_vector"], name=INDEX, fastupdate=False)),
            ],
        ),
    ]
