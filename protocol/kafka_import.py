"""Start-up speed: import kafka-python's protocol and error modules without running
``kafka/__init__.py``, which pulls in the whole client (admin, consumer, producer) and
doubles the broker's start time. Only the broker process calls this, before any kafka
import; test code and users' code import kafka-python normally."""
from __future__ import annotations

import importlib.util
import sys
import types


def skip_client_package_init() -> None:
    if "kafka" in sys.modules:
        return
    spec = importlib.util.find_spec("kafka")
    if spec is None or not spec.submodule_search_locations:
        return
    pkg = types.ModuleType("kafka")
    pkg.__path__ = list(spec.submodule_search_locations)
    pkg.__spec__ = spec
    pkg.__file__ = spec.origin
    pkg.__package__ = "kafka"
    sys.modules["kafka"] = pkg
