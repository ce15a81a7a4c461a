"""`python -m piiner.serve`: see cli.py."""

import sys

from .cli import main

sys.exit(main())
