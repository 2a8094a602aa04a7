"""What a web worker loads before its first request: its resident memory after a load is mostly this.

Issue 9 bounds a web worker at 150 MB RSS after the load benchmark. scipy (about 70 MB with
``scipy.stats``) and numba with LLVM (about 50 MB) are for the bootstrap, the card and the simulator,
which run in Celery workers and in management commands; pyarrow and huggingface_hub (about 30 MB) are
for a study's Hugging Face dataset, which a researcher exports now and then. A web process that starts, loads every URL
and every admin module, and answers a vote must not import them. The check runs in a fresh interpreter:
this test process has imported everything already.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = """
import json, sys
import django
django.setup()
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver
get_wsgi_application()
get_resolver().url_patterns  # every view module, and the admin's autodiscovery
import collection.api, collection.views, metrics.api  # the annotators' and model owners' endpoints
HEAVY = ("scipy", "numba", "llvmlite", "pyarrow", "huggingface_hub", "datasets", "pandas")
print(json.dumps(sorted(name for name in sys.modules if name.split(".")[0] in HEAVY)))
"""


def test_a_web_process_does_not_import_scipy_numba_or_the_dataset_libraries():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": os.environ.get("SECRET_KEY", "startup-probe"),
    }
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == [], f"a web process imports {loaded[:5]}… at start; import them where they are used"
