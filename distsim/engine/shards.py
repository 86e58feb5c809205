"""Splitting a range of independent items (chains, realizations, ...) into shards."""

from __future__ import annotations


def split(n_items: int, n_shards: int, align: int = 1) -> list[range]:
    """Contiguous, near-equal ranges covering ``range(n_items)``; boundaries are multiples of ``align``.

    Fewer than ``n_shards`` ranges are returned when there are not enough aligned blocks; no range
    is empty (except a single empty range for ``n_items == 0``).
    """
    if n_items < 0 or n_shards < 1 or align < 1:
        raise ValueError("split needs n_items >= 0, n_shards >= 1, align >= 1")
    if n_items == 0:
        return [range(0, 0)]
    blocks = -(-n_items // align)
    n_shards = min(n_shards, blocks)
    out = []
    for s in range(n_shards):
        b0 = blocks * s // n_shards
        b1 = blocks * (s + 1) // n_shards
        out.append(range(b0 * align, min(b1 * align, n_items)))
    return out
