"""``python -m hdcontext``: the same command line as the ``hdcontext`` script."""

import sys

from .cli.main import main

sys.exit(main())
