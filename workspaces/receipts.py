"""A deletion receipt in words, the same in the console and the CLI."""

from __future__ import annotations

from workspaces.models import WorkspaceDeletion


def receipt_lines(receipt: WorkspaceDeletion) -> list[str]:
    removed = ", ".join(f"{n} {label}" for label, n in sorted(receipt.removed.items())) or "nothing"
    files = len(receipt.files)
    deleted_at = receipt.deleted_at.isoformat(timespec="seconds")
    lines = [
        f"Deleted workspace {receipt.slug} ({receipt.name}) at {deleted_at}.",
        f"Removed at once from every serving path: {removed}.",
    ]
    if receipt.purged_at:
        lines.append(
            f"Purged {files} server-made export file(s) at {receipt.purged_at.isoformat(timespec='seconds')}."
        )
    else:
        lines.append(
            f"Kept until {receipt.purge_after.isoformat(timespec='seconds')}, then purged: "
            f"{files} server-made export file(s)."
        )
    lines.append(f"Receipt #{receipt.pk}.")
    return lines
