"""The documents say what the code does: the configuration that config/settings.py reads, the API loop."""

import re
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token as ApiToken

from collection.models import Study
from tests.factories import annotators, make_study, vote_until

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_configuration_table_lists_exactly_the_variables_the_settings_read():
    settings_source = (REPO_ROOT / "config" / "settings.py").read_text()
    read = set(re.findall(r"\b(?:env\.\w+|_rate)\(\s*\"([A-Z][A-Z0-9_]*)\"", settings_source))
    readme = (REPO_ROOT / "docs" / "operators.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, flags=re.MULTILINE))

    assert sorted(read - documented) == [], "read by the settings but missing from docs/operators.md, Configuration"
    assert sorted(documented - read) == [], "in docs/operators.md, Configuration, but no longer read by the settings"


def _section(readme: str, start: str) -> str:
    return readme.split(start, 1)[1]


@pytest.mark.django_db(transaction=True)
def test_the_readmes_loop_over_the_pages_of_pairs_fetches_every_item(live_server, django_user_model):
    # 105 items: two pages of the default 100, so a loop that stops after the first page fails here.
    study = make_study(tokens=15, ballot_count=1, appearances=2, seed=3)
    vote_until(study, voters=annotators(study, 4))
    study.refresh_from_db()
    assert study.status == Study.Status.FINISHED
    owner = django_user_model.objects.create_user("owner", password="x")
    readme = (REPO_ROOT / "docs" / "model-owners.md").read_text()
    paginated = _section(readme, "**`/pairs/` is paginated**")
    loop = re.search(r"```python\n(.*?)```", paginated, flags=re.DOTALL).group(1)

    names = {"token": ApiToken.objects.create(user=owner).key}
    exec(loop.replace("http://127.0.0.1:8000", live_server.url).replace("/demo/", f"/{study.slug}/"), names)

    assert sorted(pair["item"] for pair in names["pairs"]) == sorted(study.items.values_list("pk", flat=True))
