import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('projects', '0003_audit_event'),
    ]

    operations = [
        migrations.CreateModel(
            name='IdempotencyKey',
            fields=[
                ('id', models.BigAutoField(primary_key=True, serialize=False)),
                ('holder', models.CharField(max_length=80)),
                ('scope', models.CharField(max_length=200)),
                ('key', models.CharField(max_length=200)),
                ('fingerprint', models.CharField(help_text='sha256 of the request, minus the key', max_length=64)),
                ('status', models.PositiveSmallIntegerField(default=0)),
                ('body', models.JSONField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('expires_at', models.DateTimeField(db_index=True)),
                ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('holder', 'scope', 'key'), name='idempotency_once')],
            },
        ),
    ]
