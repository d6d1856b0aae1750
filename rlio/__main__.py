"""``python -m rlio``: the command-line interface."""

import sys

from rlio.cli import main

sys.exit(main())
