"""``python -m yardstick_client``: the ``yardstick`` command."""

import sys

from yardstick_client.cli import main

sys.exit(main())
