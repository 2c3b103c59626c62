"""Session events lose three single-column indexes no query needs: `session_id` and `user_id` (the composite
indexes on (session, occurred_at), (session, position) and (user, project) lead with them) and `created_at`
(nothing filters events by it). Each event's insert and its vector's update wrote an entry into each of them.

Only the indexes go: Django's own AlterField would also drop and re-add both foreign keys, which checks every
stored event against its session and user again. Dropping an index is quick at any table size."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

TABLE = "agent_sessions_sessionevent"
COLUMNS = ("session_id", "user_id", "created_at")
# The single-column btree indexes of those columns, whatever names an older Django gave them.
DROP = f"""
DO $$
DECLARE name text;
BEGIN
  FOR name IN
    SELECT c.relname FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]
    WHERE t.relname = '{TABLE}' AND i.indnatts = 1 AND NOT i.indisprimary AND NOT i.indisunique
      AND a.attname IN {COLUMNS!r}
  LOOP
    EXECUTE format('DROP INDEX %I', name);
  END LOOP;
END $$;"""
RESTORE = "\n".join(f'CREATE INDEX "{TABLE}_{column}_restored" ON "{TABLE}" ("{column}");' for column in COLUMNS)


class Migration(migrations.Migration):

    dependencies = [
        ("agent_sessions", "0007_event_position"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(DROP, RESTORE)],
            state_operations=[
                migrations.AlterField(
                    model_name="sessionevent",
                    name="created_at",
                    field=models.DateTimeField(auto_now_add=True),
                ),
                migrations.AlterField(
                    model_name="sessionevent",
                    name="session",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="events", to="agent_sessions.session"),
                ),
                migrations.AlterField(
                    model_name="sessionevent",
                    name="user",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="+", to=settings.AUTH_USER_MODEL),
                ),
            ],
        ),
    ]
