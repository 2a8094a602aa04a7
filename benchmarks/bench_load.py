"""What a vote costs on the full stack as deployed, in /healthz/ requests of the same server.

    python benchmarks/bench_load.py [--web-workers 3 --threads 8 --label "gthread 3x8"] [--json FILE]

The load generator lives with the reliability harness it drives (``tests/reliability/bench_load.py``):
it uses the test extra's httpx and PyYAML, which the platform itself does not need
(``pip install -e '.[test]'``). See that module for the phases and the figures it prints.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.reliability.bench_load import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
