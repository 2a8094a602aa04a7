"""``python -m yardstick_client``: the ``yardstick`` command."""

import sys

from .cli import main

sys.exit(main())
