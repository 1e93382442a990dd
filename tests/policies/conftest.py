"""Policy pack tests. The policies are the ``joiner_policies`` package inside policies/
(a policy pack directory, not an installed package), and the bridge test reuses the
components' mocked Pulumi runtime (tests/components/pulumi_harness.py): both directories
go on sys.path here, before the test modules import them."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for directory in (ROOT / "policies", ROOT / "tests" / "components"):
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
