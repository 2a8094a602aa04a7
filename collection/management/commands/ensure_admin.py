"""Create the admin superuser once, with a random password kept in a file, and print the login.

`make run` calls this on every start: the first run creates the user and the password file,
later runs print the same login. It never changes the password of an existing user.
"""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the superuser (default 'admin') if it is missing, with a random password stored in a file."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="admin")
        parser.add_argument(
            "--password-file",
            type=Path,
            default=None,
            help="Where the password is kept (default: YARDSTICK_DATA_DIR/admin-password, i.e. var/admin-password).",
        )
        parser.add_argument("--url", default=None, help="Admin URL to print (default: SITE_URL/admin/).")

    def handle(self, *args, username, password_file, url, **options):
        password_file = password_file or settings.DATA_DIR / "admin-password"
        url = url or settings.SITE_URL.rstrip("/") + "/admin/"
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()

        if password_file.exists():
            password = password_file.read_text().strip()
        elif user is not None:
            self.stdout.write(
                self.style.WARNING(
                    f"The user '{username}' exists but its password is not stored in {password_file}.\n"
                    f"Set one with: python manage.py changepassword {username}"
                )
            )
            return
        else:
            password = secrets.token_urlsafe(15)
            _write_private_file(password_file, password + "\n")

        if user is None:
            user = user_model.objects.create_superuser(username=username, email="", password=password)

        if not user.check_password(password):
            self.stdout.write(
                self.style.WARNING(
                    f"The password of '{username}' was changed since it was stored in {password_file}: "
                    f"log in with the one you set, or reset it with: python manage.py changepassword {username}"
                )
            )
            return

        rule = "=" * 72
        self.stdout.write(
            "\n".join(
                [
                    rule,
                    f"  Yardstick admin:  {url}",
                    f"  user:             {username}",
                    f"  password:         {password}",
                    f"  (stored in {password_file})",
                    rule,
                ]
            )
        )


def _write_private_file(path: Path, text: str) -> None:
    """Write ``text`` to a new file readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
