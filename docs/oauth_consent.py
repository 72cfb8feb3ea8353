"""Play the workspace owner on the consent page, for manual checks without a browser.

Usage (same environment as the server: DATABASE_URL, PUBLIC_URL, SECRET_KEY):

    .venv/bin/python docs/oauth_consent.py USERNAME AUTHORIZE_URL [--role reader|contributor]
        [--zone claude] [--deny]

It opens the authorization URL as USERNAME (a session made in-process, as a signed-in browser
would carry), submits the consent form for all projects with the public and internal data
classes, and then requests the redirect the server answered with, which delivers the code to the
client's loopback callback listener (the MCP Inspector's, mcp-remote's, ...). Prints that redirect.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "unforgetter.settings")


def main() -> int:
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("username")
    parser.add_argument("authorize_url")
    parser.add_argument("--role", default="reader")
    parser.add_argument("--zone", default="claude")
    parser.add_argument("--deny", action="store_true")
    args = parser.parse_args()

    client = Client()
    client.force_login(User.objects.get(username=args.username))
    parts = urlsplit(args.authorize_url)
    path = f"{parts.path}?{parts.query}"
    page = client.get(path)
    if page.status_code != 200:
        print(f"authorize answered {page.status_code}: {page.get('Location') or page.content[:300]!r}")
        return 1
    text = page.content.decode()
    form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', text))
    data: dict[str, object] = {k: html.unescape(v) for k, v in form.items()}
    if not args.deny:
        data.update(
            allow="Authorize",
            all_projects="on",
            data_classes=["public", "internal"],
            role=args.role,
            zone=args.zone,
        )
    answer = client.post(path, data)
    location = answer.get("Location")
    if answer.status_code != 302 or not location:
        print(f"consent answered {answer.status_code}; nothing granted")
        return 1
    print(location)
    with urllib.request.urlopen(location, timeout=30) as delivered:  # noqa: S310 (a loopback callback)
        delivered.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
