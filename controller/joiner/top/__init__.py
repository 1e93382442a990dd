"""``joiner top``: the cluster at a glance, and the node table of ``joiner simulate``.

``view`` holds the facts shown (one ``NodeLine`` per node or launching NodeClaim),
``snapshot`` builds them from a cluster's objects (plain dicts), ``render`` draws them
with rich, and ``live`` keeps a frame current from watches.
"""

from __future__ import annotations

import importlib.util


def rich_installed() -> bool:
    """rich draws every view (an optional dependency: the ``top`` and ``sim`` extras)."""
    return importlib.util.find_spec("rich") is not None
