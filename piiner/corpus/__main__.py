"""`python -m piiner.corpus`: see cli.py."""

import sys

from .cli import main

sys.exit(main())
