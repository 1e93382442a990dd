"""The verdict-parity summary: test_crds_on_server records, per corpus file, how many
cases agree with upstream Karpenter's CRDs; the run ends with one line saying so."""

from __future__ import annotations

import pytest

PARITY = pytest.StashKey[dict[str, tuple[int, int]]]()  # file -> (agreeing, cases)


@pytest.fixture
def parity_summary(request: pytest.FixtureRequest) -> dict[str, tuple[int, int]]:
    return request.config.stash.setdefault(PARITY, {})


def pytest_terminal_summary(terminalreporter: object, config: pytest.Config) -> None:
    results = config.stash.get(PARITY, {})
    if not results:
        return
    agreeing = sum(a for a, _ in results.values())
    cases = sum(n for _, n in results.values())
    terminalreporter.write_line(  # type: ignore[attr-defined]
        f"CRD parity with upstream Karpenter: {cases} cases in {len(results)} files, "
        f"{100 * agreeing / cases:.1f}% agree (upstream's CRDs, Joiner's, joiner validate)"
    )
