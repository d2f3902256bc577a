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


def import_submodule_alone(name: str) -> types.ModuleType:
    """Import ``name`` (``pkg.sub``) without running ``pkg/__init__.py``, which for kafka-python's
    message packages builds every message class of the family: start-up answers ApiVersions with
    ``kafka.protocol.metadata.api_versions`` alone. The stand-in package is removed again, so a
    later ``import pkg`` runs the real ``__init__``, which finds the submodule already loaded and
    uses the same classes."""
    if name in sys.modules:
        return sys.modules[name]
    parent, _, _ = name.rpartition(".")
    if parent in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec(parent)
    if spec is None or not spec.submodule_search_locations:
        return importlib.import_module(name)
    stand_in = types.ModuleType(parent)
    stand_in.__path__ = list(spec.submodule_search_locations)
    stand_in.__spec__ = spec
    stand_in.__package__ = parent
    sys.modules[parent] = stand_in
    try:
        return importlib.import_module(name)
    finally:
        if sys.modules.get(parent) is stand_in:
            del sys.modules[parent]
