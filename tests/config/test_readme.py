"""README.md documents the configuration that config/settings.py reads."""

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_configuration_table_lists_exactly_the_variables_the_settings_read():
    settings_source = (REPO_ROOT / "config" / "settings.py").read_text()
    read = set(re.findall(r"\b(?:env\.\w+|_rate)\(\s*\"([A-Z][A-Z0-9_]*)\"", settings_source))
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", section, flags=re.MULTILINE))

    assert sorted(read - documented) == [], "read by the settings but missing from README.md, Configuration"
    assert sorted(documented - read) == [], "in README.md, Configuration, but no longer read by the settings"
