"""CIDR blocks judged by the addresses they cover, not by how they are written.

``0.0.0.0/1`` plus ``128.0.0.0/1`` is the whole IPv4 internet though neither is a
``/0``; overlapping and adjacent blocks add up. So a set of blocks is first merged into
the addresses it covers, per IP version, and then measured:

- ``public_addresses``: how many of them the internet can connect from. For IPv4 that
  is everything but the special-purpose ranges of RFC 6890 (private, loopback,
  link-local, shared, documentation, benchmarking), multicast and the reserved
  240.0.0.0/4; for IPv6 the global unicast space 2000::/3 (the only one handed out to
  networks) but its documentation ranges.
- ``uncovered``: the blocks that are not wholly inside a set of allowed blocks (together:
  a block split across two allowed ones is covered).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*blocks: str) -> list[Network]:
    return [ipaddress.ip_network(block) for block in blocks]


# The space the internet routes to, per IP version, and the parts of it no one
# connects from.
_PUBLIC = {4: _nets("0.0.0.0/0"), 6: _nets("2000::/3")}
_NOT_PUBLIC = {
    4: _nets(
        "0.0.0.0/8",
        "10.0.0.0/8",
        "100.64.0.0/10",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
    ),
    6: _nets("2001:db8::/32", "3fff::/20"),
}


def block_size(version: int, prefix: int) -> int:
    """Addresses in one block of this prefix length (``block_size(4, 16)``: 65,536)."""
    return 2 ** ((32 if version == 4 else 128) - prefix)


def merged(blocks: Iterable[Network], version: int) -> list[Network]:
    """The addresses of the blocks of one IP version, as disjoint blocks."""
    return list(ipaddress.collapse_addresses(b for b in blocks if b.version == version))


def _overlap(a: Network, b: Network) -> int:
    """Addresses two blocks share (CIDR blocks either nest or are disjoint)."""
    if a.subnet_of(b):  # type: ignore[arg-type]
        return a.num_addresses
    if b.subnet_of(a):  # type: ignore[arg-type]
        return b.num_addresses
    return 0


def public_addresses(blocks: Iterable[Network], version: int) -> int:
    """How many public addresses of one IP version the blocks cover together."""
    total = 0
    for block in merged(blocks, version):
        total += sum(_overlap(block, public) for public in _PUBLIC[version])
        total -= sum(_overlap(block, private) for private in _NOT_PUBLIC[version])
    return total


def is_public(block: Network) -> bool:
    return public_addresses([block], block.version) > 0


def uncovered(blocks: Iterable[Network], allowed: Iterable[Network]) -> list[Network]:
    """The blocks with addresses outside all of the allowed blocks."""
    allowed = list(allowed)
    return [block for block in blocks if not _covered(block, merged(allowed, block.version))]


def _covered(block: Network, allowed: list[Network]) -> bool:
    inside = sum(_overlap(block, ok) for ok in allowed)  # merged: no address counted twice
    return inside == block.num_addresses
