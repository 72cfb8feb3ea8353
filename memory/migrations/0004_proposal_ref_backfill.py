"""Data: give existing proposals a random ref each, and existing publications a content version."""

import secrets

from django.db import migrations
from django.db.models import F

# A copy of memory.refs as it was when this migration was written: migrations must not change
# when the app's code does.
_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"


def new_proposal_ref():
    return "prop_" + "".join(secrets.choice(_ALPHABET) for _ in range(14))


def forwards(apps, schema_editor):
    Proposal = apps.get_model("memory", "Proposal")
    Publication = apps.get_model("memory", "Publication")
    for proposal in Proposal.objects.filter(ref__isnull=True).only("pk").iterator():
        Proposal.objects.filter(pk=proposal.pk).update(ref=new_proposal_ref())
    Publication.objects.filter(content_version=0).update(content_version=F("version"))


class Migration(migrations.Migration):
    dependencies = [("memory", "0003_proposal_ref_kind_watermark_publication_ledger")]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
