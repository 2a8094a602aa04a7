"""The site's icon: /favicon.ico answers (browsers ask for it unprompted), and every page links it."""

import re
import struct

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static

pytestmark = pytest.mark.django_db


def icon_links(html: str) -> list[str]:
    return re.findall(r'<link rel="icon" href="([^"]+)"', html)


def test_favicon_ico_answers_with_the_icon_of_the_static_files(client):
    response = client.get("/favicon.ico")

    assert (response.status_code, response["Location"]) == (302, static("favicon.ico"))
    with open(finders.find("favicon.ico"), "rb") as icon:
        reserved, kind, count = struct.unpack("<HHH", icon.read(6))
        sizes = [struct.unpack("<BBBBHHII", icon.read(16))[:2] for _ in range(count)]
    assert (reserved, kind, sizes) == (0, 1, [(16, 16), (32, 32)])  # an ICO of two images


def test_the_sites_pages_and_the_admins_link_the_icon(client, admin_client):
    home = client.get("/").content.decode()
    login = client.get("/admin/login/").content.decode()
    study_list = admin_client.get("/admin/collection/study/").content.decode()

    assert icon_links(home) == icon_links(login) == icon_links(study_list) == [static("favicon.ico")]
