"""`manage.py ensure_admin`, which `make run` calls on every start."""

import stat
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def run_ensure_admin(password_file) -> str:
    out = StringIO()
    call_command("ensure_admin", password_file=password_file, url="http://127.0.0.1:8000/admin/", stdout=out)
    return out.getvalue()


def test_it_creates_a_superuser_whose_password_it_prints_and_stores(tmp_path):
    password_file = tmp_path / "admin-password"

    output = run_ensure_admin(password_file)

    password = password_file.read_text().strip()
    admin = get_user_model().objects.get(username="admin")
    assert (admin.is_superuser, admin.is_staff, admin.check_password(password)) == (True, True, True)
    assert f"  password:         {password}\n" in output
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600


def test_it_prints_the_same_password_on_every_run_and_keeps_one_user(tmp_path):
    password_file = tmp_path / "admin-password"

    first_output = run_ensure_admin(password_file)
    second_output = run_ensure_admin(password_file)

    assert second_output == first_output
    assert get_user_model().objects.filter(username="admin").count() == 1


def test_it_recreates_the_user_with_the_stored_password_after_the_database_was_reset(tmp_path):
    password_file = tmp_path / "admin-password"
    password_file.write_text("kept-from-an-earlier-database\n")

    run_ensure_admin(password_file)

    assert get_user_model().objects.get(username="admin").check_password("kept-from-an-earlier-database")


def test_it_never_changes_the_password_of_an_existing_user(tmp_path):
    password_file = tmp_path / "admin-password"
    run_ensure_admin(password_file)
    admin = get_user_model().objects.get(username="admin")
    admin.set_password("chosen-by-the-admin")
    admin.save()

    output = run_ensure_admin(password_file)

    admin.refresh_from_db()
    assert admin.check_password("chosen-by-the-admin")
    assert output == (
        f"The password of 'admin' was changed since it was stored in {password_file}: log in with the one "
        "you set, or reset it with: python manage.py changepassword admin\n"
    )


def test_it_does_not_invent_a_password_for_an_existing_user_without_a_stored_one(tmp_path):
    password_file = tmp_path / "admin-password"
    get_user_model().objects.create_superuser(username="admin", email="", password="set-by-hand")

    output = run_ensure_admin(password_file)

    assert not password_file.exists()
    assert get_user_model().objects.get(username="admin").check_password("set-by-hand")
    assert output == (
        f"The user 'admin' exists but its password is not stored in {password_file}.\n"
        "Set one with: python manage.py changepassword admin\n"
    )
