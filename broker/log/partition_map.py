"""A topic's local partition logs by index, possibly with holes.

Why: on a single node a broker holds every partition of its topics; in a cluster it holds only
its replicas (Kafka's brokers keep no log for a partition they are not a replica of). The map
iterates the local partitions in index order and answers ``get(index)`` with None for a
partition held elsewhere; the topic's partition count is ``Topic.partition_count``, not ``len``
(which counts the local logs). On a single node there are no holes, so ``len``, indexing and
slicing behave as the dense list they replace.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, overload
from collections.abc import Iterator

if TYPE_CHECKING:
    from .partition import Partition


class PartitionMap:
    __slots__ = ("_by_index",)

    def __init__(self) -> None:
        self._by_index: dict[int, Partition] = {}

    def add(self, part: Partition) -> None:
        """Add a local partition, keeping index order."""
        by = self._by_index
        if by and part.index < max(by):
            by[part.index] = part
            self._by_index = dict(sorted(by.items()))
        else:
            by[part.index] = part

    def pop(self, index: int) -> Partition | None:
        return self._by_index.pop(index, None)

    def get(self, index: int) -> Partition | None:
        return self._by_index.get(index)

    def indexes(self) -> list[int]:
        return list(self._by_index)

    def __contains__(self, index: object) -> bool:
        return index in self._by_index

    def __iter__(self) -> Iterator[Partition]:
        return iter(list(self._by_index.values()))

    def __len__(self) -> int:
        return len(self._by_index)

    def __bool__(self) -> bool:
        return bool(self._by_index)

    @overload
    def __getitem__(self, index: int) -> Partition: ...
    @overload
    def __getitem__(self, index: slice) -> list[Partition]: ...

    def __getitem__(self, index: int | slice) -> Partition | list[Partition]:
        """``[i]``: the local partition i (KeyError when held elsewhere); ``[a:b]``: the local
        partitions with indexes in range(a, b)."""
        if isinstance(index, slice):
            start, stop, _ = index.indices(max(self._by_index, default=-1) + 1)
            return [p for i, p in self._by_index.items() if start <= i < stop]
        return self._by_index[index]
