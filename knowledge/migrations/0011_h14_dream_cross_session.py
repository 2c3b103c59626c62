from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0010_j14_knowledge_pinned'),
    ]

    operations = [
        migrations.AddField(
            model_name='dreamrun',
            name='crossed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        # Runs recorded before this migration were planned with two jobs only: nothing of theirs is pending.
        migrations.RunSQL(
            "UPDATE knowledge_dreamrun SET crossed_at = created_at",
            migrations.RunSQL.noop,
        ),
    ]
