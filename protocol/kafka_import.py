"""Start-up speed: import kafka-python's protocol, error and record-util modules without
running ``kafka/__init__.py`` (which pulls in the whole client: admin, consumer, producer,
doubling the broker's start time) or ``kafka/record/__init__.py`` (the client's record
builders and every codec). Only the broker process calls this, before any kafka import;
test code and users' code import kafka-python normally."""
from __future__ import annotations

import importlib.util
import sys
import types

_PACKAGES = ("kafka", "kafka.record")


def skip_client_package_init() -> None:
    for name in _PACKAGES:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            return
        pkg = types.ModuleType(name)
        pkg.__path__ = list(spec.submodule_search_locations)
        pkg.__spec__ = spec
        pkg.__file__ = spec.origin
        pkg.__package__ = name
        sys.modules[name] = pkg
