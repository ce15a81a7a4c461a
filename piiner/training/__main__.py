"""`python -m piiner.training` and `accelerate launch -m piiner.training`: the same as `piiner-train`."""

import sys

from piiner.training.train import cli

sys.exit(cli())
