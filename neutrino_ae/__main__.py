"""``python -m neutrino_ae``: the same as the ``neutrino-ae`` console script."""

import sys

from neutrino_ae.cli import main

sys.exit(main())
