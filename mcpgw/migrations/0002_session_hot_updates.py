"""Every tool call's update of its MCP session becomes a HOT update: `last_seen_at` leaves the index (a token's
few open sessions need no index to be ordered by it), and the table keeps half of each new page free, so a call's
new row version lands on the row's own page and no index gets an entry for it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("mcpgw", "0001_initial"),
        ("projects", "0006_j21c_review_members"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="mcpsession", name="mcpsession_token_open_idx"),
        migrations.AddIndex(
            model_name="mcpsession",
            index=models.Index(fields=["token", "closed_at"], name="mcpsession_token_open"),
        ),
        migrations.RunSQL("ALTER TABLE mcpgw_mcpsession SET (fillfactor = 50)",
                          "ALTER TABLE mcpgw_mcpsession RESET (fillfactor)"),
    ]
