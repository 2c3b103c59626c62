"""Each scope's count of retrievable knowledge rows (`knowledge.models.ScopeRows`), kept by triggers.

Inserts and deletes are counted per statement from their transition tables (a COPY of 100,000 rows is one
upsert per scope, not one per row). An update fires only when it changes what is counted: the row's scope, or
whether it is live, an action item, decayed out, or held for review; the credit and confidence updates of every
session close never fire it, and stay HOT. A scope's upserts are ordered by scope, so two statements touching the
same scopes take their row locks in one order. The counted condition is `knowledge_scope`'s at DECAY_FLOOR (0.3);
a deployment that overrides the floor counts its scopes row by row as before.
"""

from django.db import migrations, models

COUNT = """
CREATE OR REPLACE FUNCTION knowledge_scope_key(p_project uuid, p_owner uuid) RETURNS text AS $$
  SELECT CASE WHEN p_project IS NULL THEN 'owner:' || p_owner::text ELSE 'project:' || p_project::text END
$$ LANGUAGE sql IMMUTABLE;

CREATE OR REPLACE FUNCTION knowledge_scope_counted(p_deleted timestamptz, p_superseded uuid, p_type text,
                                                   p_decay float8, p_review text) RETURNS boolean AS $$
  SELECT p_deleted IS NULL AND p_superseded IS NULL AND p_type <> 'action_item'
     AND (p_decay > 0.3 OR p_type = 'decision') AND p_review NOT IN ('pending', 'rejected')
$$ LANGUAGE sql IMMUTABLE;

CREATE OR REPLACE FUNCTION knowledge_scope_rows_statement() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO knowledge_scoperows AS c (scope, rows)
    SELECT knowledge_scope_key(project_id, owner_id), count(*) FROM knowledge_new_rows
    WHERE knowledge_scope_counted(deleted_at, superseded_by_id, type, decay_score, review_status)
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (scope) DO UPDATE SET rows = c.rows + EXCLUDED.rows;
  ELSE
    INSERT INTO knowledge_scoperows AS c (scope, rows)
    SELECT knowledge_scope_key(project_id, owner_id), -count(*) FROM knowledge_old_rows
    WHERE knowledge_scope_counted(deleted_at, superseded_by_id, type, decay_score, review_status)
    GROUP BY 1 ORDER BY 1
    ON CONFLICT (scope) DO UPDATE SET rows = c.rows + EXCLUDED.rows;
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION knowledge_scope_rows_update() RETURNS trigger AS $$
BEGIN
  INSERT INTO knowledge_scoperows AS c (scope, rows)
  SELECT scope, sum(delta) FROM (
    SELECT knowledge_scope_key(OLD.project_id, OLD.owner_id) AS scope, -1 AS delta
    WHERE knowledge_scope_counted(OLD.deleted_at, OLD.superseded_by_id, OLD.type, OLD.decay_score, OLD.review_status)
    UNION ALL
    SELECT knowledge_scope_key(NEW.project_id, NEW.owner_id), 1
    WHERE knowledge_scope_counted(NEW.deleted_at, NEW.superseded_by_id, NEW.type, NEW.decay_score, NEW.review_status)
  ) d GROUP BY scope HAVING sum(delta) <> 0 ORDER BY scope
  ON CONFLICT (scope) DO UPDATE SET rows = c.rows + EXCLUDED.rows;
  RETURN NULL;
END $$ LANGUAGE plpgsql;

CREATE TRIGGER knowledge_scope_rows_insert AFTER INSERT ON knowledge_knowledgeitem
  REFERENCING NEW TABLE AS knowledge_new_rows FOR EACH STATEMENT EXECUTE FUNCTION knowledge_scope_rows_statement();
CREATE TRIGGER knowledge_scope_rows_delete AFTER DELETE ON knowledge_knowledgeitem
  REFERENCING OLD TABLE AS knowledge_old_rows FOR EACH STATEMENT EXECUTE FUNCTION knowledge_scope_rows_statement();
CREATE TRIGGER knowledge_scope_rows_update AFTER UPDATE ON knowledge_knowledgeitem
  FOR EACH ROW WHEN ((knowledge_scope_key(OLD.project_id, OLD.owner_id),
                      knowledge_scope_counted(OLD.deleted_at, OLD.superseded_by_id, OLD.type, OLD.decay_score,
                                              OLD.review_status))
                     IS DISTINCT FROM
                     (knowledge_scope_key(NEW.project_id, NEW.owner_id),
                      knowledge_scope_counted(NEW.deleted_at, NEW.superseded_by_id, NEW.type, NEW.decay_score,
                                              NEW.review_status)))
  EXECUTE FUNCTION knowledge_scope_rows_update();

-- The rows already there, counted under the triggers' lock (CREATE TRIGGER holds SHARE ROW EXCLUSIVE until
-- the migration commits, so no write slips between the count and the first trigger).
INSERT INTO knowledge_scoperows (scope, rows)
SELECT knowledge_scope_key(project_id, owner_id), count(*) FROM knowledge_knowledgeitem
WHERE knowledge_scope_counted(deleted_at, superseded_by_id, type, decay_score, review_status)
GROUP BY 1;
"""
UNCOUNT = """
DROP TRIGGER IF EXISTS knowledge_scope_rows_insert ON knowledge_knowledgeitem;
DROP TRIGGER IF EXISTS knowledge_scope_rows_delete ON knowledge_knowledgeitem;
DROP TRIGGER IF EXISTS knowledge_scope_rows_update ON knowledge_knowledgeitem;
DROP FUNCTION IF EXISTS knowledge_scope_rows_update();
DROP FUNCTION IF EXISTS knowledge_scope_rows_statement();
DROP FUNCTION IF EXISTS knowledge_scope_counted(timestamptz, uuid, text, float8, text);
DROP FUNCTION IF EXISTS knowledge_scope_key(uuid, uuid);
"""


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0016_dream_run_abandoned"),
    ]

    operations = [
        migrations.CreateModel(
            name="ScopeRows",
            fields=[
                ("scope", models.CharField(max_length=60, primary_key=True, serialize=False)),
                ("rows", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(COUNT, UNCOUNT),
    ]
