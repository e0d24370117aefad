"""Suite-wide setup: the outcome cache is off unless a test turns it on (with its own file),
so that no test reuses an outcome another run of the suite left in the user's cache."""

import os

os.environ.setdefault("ASCENDCRAFT_OUTCOME_CACHE", "off")
