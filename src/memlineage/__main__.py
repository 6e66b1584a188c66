"""``python -m memlineage``: the command line (what ``memlineage`` runs)."""

import sys

from .cli import main

sys.exit(main())
