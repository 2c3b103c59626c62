"""Each event's place in its session (`SessionEvent.position`), numbered for the events already stored in the
order their sessions show them (time logged, then row creation)."""

from django.db import migrations, models

BACKFILL = """
UPDATE agent_sessions_sessionevent e SET position = o.n
FROM (SELECT id, row_number() OVER (PARTITION BY session_id ORDER BY occurred_at, created_at, id) - 1 AS n
      FROM agent_sessions_sessionevent) o
WHERE o.id = e.id"""


class Migration(migrations.Migration):
    dependencies = [
        ("agent_sessions", "0006_event_search_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="sessionevent",
            name="position",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.AddIndex(
            model_name="sessionevent",
            index=models.Index(fields=["session", "position"], name="event_session_position"),
        ),
    ]
