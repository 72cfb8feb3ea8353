import memory.refs
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_proposal_ref_backfill")]

    operations = [
        migrations.AlterField(
            model_name="proposal",
            name="ref",
            field=models.CharField(
                default=memory.refs.new_proposal_ref,
                editable=False,
                help_text="The proposal_id agents see.",
                max_length=32,
                unique=True,
            ),
        ),
    ]
