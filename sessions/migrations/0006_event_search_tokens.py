"""BM25's row length stored beside each event's tsvector (the function comes from knowledge 0015)."""

import django.contrib.postgres.search
from django.db import migrations, models

import knowledge.models


class Migration(migrations.Migration):
    dependencies = [
        ("agent_sessions", "0005_j14_session_binding"),
        ("knowledge", "0015_search_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="sessionevent",
            name="search_tokens",
            field=models.GeneratedField(
                db_persist=True,
                expression=knowledge.models.search_tokens(
                    django.contrib.postgres.search.SearchVector("content", config="english")),
                output_field=models.IntegerField(),
            ),
        ),
    ]
