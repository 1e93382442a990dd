"""The production wiring round trip seeds the session's moto server (``moto_url``) like a
cluster's AWS account with the AWS provider tests' seeding module, and runs against the
local Kubernetes API server (``apiserver``); both fixtures live in tests/conftest.py."""

from __future__ import annotations

import sys
from pathlib import Path

# The seeding helpers live with the AWS provider tests; one copy, imported from there.
sys.path.insert(
    0, str(Path(__file__).resolve().parents[1] / "controller" / "cloudprovider" / "aws")
)
