"""`python -m piiner.deid`: see cli.py."""

import sys

from .cli import main

sys.exit(main())
