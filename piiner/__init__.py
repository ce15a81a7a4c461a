"""The Hub files at the repository root, importable as the package ``piiner``.

``configuration_piiner.py``, ``modeling_piiner.py`` and their siblings live at the root because that is the
shape of a Hub model repo, and they import each other relatively (``from .configuration_piiner import ...``)
because that is what ``trust_remote_code`` copies next to the weights. Relative imports need a package, so this
one points its search path at the root: ``from piiner.modeling_piiner import PiiNerForTokenClassification``
loads ``<root>/modeling_piiner.py`` as ``piiner.modeling_piiner``. Nothing else lives here.
"""

import os

__path__ = [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
