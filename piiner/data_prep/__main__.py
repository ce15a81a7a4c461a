"""`python -m piiner.data_prep`: see cli.py."""

import sys

from .cli import main

sys.exit(main())
