"""``python -m ascendcraft.cli``."""

import sys

from .main import main

sys.exit(main())
