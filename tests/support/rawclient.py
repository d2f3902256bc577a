"""The raw protocol client the tests send exact requests with. It lives in bench/rawclient.py,
because the benchmarks use it too and bench must not import tests; tests may import bench."""
from __future__ import annotations

from bench.rawclient import RawClient

__all__ = ["RawClient"]
