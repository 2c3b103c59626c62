"""Learned rows written without a project (before issue 15) move to the project of the session they came from.

A learned row is one extraction wrote: source user_correction, discovery or decision, or a cross-session row
(tag `cross_session`). Its source session is found, in this order, by
1. the `learning_captured` event of the owner whose rule is the row's text (close-capture learnings),
2. the owner's extract job that was running when the row was created (rows mined from a session),
3. for cross-session rows, their `session:<id>` tags when those sessions all ran in one project
   (a pattern seen in two or more projects has proved itself there and stays in the owner's scope).
A row whose session cannot be found stays where it is. Rows taught, imported or edited by hand are untouched.
"""

from django.db import migrations
from django.db.models import Q

LEARNED_SOURCES = ("user_correction", "discovery", "decision")


def _by_event(apps, row):
    event = apps.get_model("agent_sessions", "SessionEvent").objects.filter(
        user_id=row.owner_id, event_type="learning_captured", payload__rule__iexact=row.content.strip(),
        occurred_at__lte=row.created_at,
    ).order_by("-occurred_at").first()
    return event.session if event else None


def _by_job(apps, row):
    job = apps.get_model("agent_sessions", "SessionJob").objects.filter(
        user_id=row.owner_id, name="extract", claimed_at__lte=row.created_at, finished_at__gte=row.created_at,
    ).order_by("-claimed_at").first()
    return job.session if job else None


def _by_tags(apps, row):
    ids = [t.split(":", 1)[1] for t in row.tags if t.startswith("session:")]
    sessions = list(apps.get_model("agent_sessions", "Session").objects.filter(user_id=row.owner_id, id__in=ids))
    projects = {s.project_id for s in sessions}
    return sessions[0] if len(projects) == 1 else None


def forwards(apps, schema_editor):
    Item = apps.get_model("knowledge", "KnowledgeItem")
    learned = Q(source__in=LEARNED_SOURCES) | Q(tags__contains=["cross_session"])
    for row in Item.objects.filter(learned, project__isnull=True).iterator():
        if "cross_session" in row.tags:
            session = _by_tags(apps, row)
        else:
            session = _by_event(apps, row) or _by_job(apps, row)
        if session is not None:
            Item.objects.filter(id=row.id).update(project_id=session.project_id, source_session_id=session.id)


class Migration(migrations.Migration):

    dependencies = [
        ("agent_sessions", "0003_crosssessioncursor_sessionjob"),
        ("knowledge", "0005_i15_source_session"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
