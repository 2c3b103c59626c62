from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0004_file_scope"),
    ]

    operations = [
        migrations.AddField(
            model_name="knowledgeitem",
            name="source_session_id",
            field=models.UUIDField(blank=True, null=True),
        ),
    ]
