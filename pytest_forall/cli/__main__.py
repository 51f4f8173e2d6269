"""``python -m pytest_forall.cli``: the ``forall`` command without its console script."""

import sys

from pytest_forall.cli import main

sys.exit(main())
