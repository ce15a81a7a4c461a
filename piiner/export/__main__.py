"""`python -m piiner.export`: see cli.py."""

import sys

from .cli import main

sys.exit(main())
