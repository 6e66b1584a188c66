"""``python -m memlineage``: the command line (what ``memlineage`` runs)."""

import sys

from memlineage.interfaces.cli import main

sys.exit(main())
