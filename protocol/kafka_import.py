"""Start-up speed: import kafka-python's protocol, error and record-util modules without
running ``kafka/__init__.py`` (which pulls in the whole client: admin, consumer, producer,
doubling the broker's start time) or ``kafka/record/__init__.py`` (the client's record
builders and every codec), and the crc32c package's checksum without its ``__init__`` (which
reads its own version through ``importlib.metadata``: ~35 ms scanning the installed
distributions). Only the broker process calls this, before any kafka import; test code and
users' code import kafka-python and crc32c normally."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import types
from typing import Any

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
    _import_util_without_errors()
    _defer_crc32c_init()
    _import_load_json_without_resources()


def _import_util_without_errors() -> None:
    """``kafka.util`` (its ``classproperty`` is on every message class) without ``kafka.errors``
    (~8 ms at start-up: several hundred error classes), which it imports only for the
    ``KafkaTimeoutError`` its client-side ``Timer`` raises. It is loaded beside a stand-in
    ``kafka.errors`` whose ``KafkaTimeoutError`` builds the real one when raised, importing the
    real module then; the stand-in is removed at once, so ``import kafka.errors`` anywhere later
    loads the real module."""
    if "kafka.util" in sys.modules or "kafka.errors" in sys.modules:
        return
    stand_in = types.ModuleType("kafka.errors")

    class KafkaTimeoutError(Exception):
        def __new__(cls, *args: object, **kwargs: object) -> Exception:  # type: ignore[misc]
            from kafka.errors import KafkaTimeoutError as real
            error: Exception = real(*args, **kwargs)
            return error

    stand_in.KafkaTimeoutError = KafkaTimeoutError  # type: ignore[attr-defined]
    sys.modules["kafka.errors"] = stand_in
    try:
        importlib.import_module("kafka.util")
    except ImportError:
        pass                    # a kafka-python without it: its own import reports that later
    finally:
        if sys.modules.get("kafka.errors") is stand_in:
            del sys.modules["kafka.errors"]


def _import_load_json_without_resources() -> None:
    """kafka-python's ``load_json`` (every message class reads its JSON schema through it) without
    ``importlib.resources``, which it imports for ``read_text`` alone: that package with the file
    reader its first ``read_text`` imports (``importlib.readers``, ``zipfile``) is ~5 ms of
    start-up. ``load_json`` is imported beside a stand-in ``importlib.resources`` whose
    ``read_text`` reads a schema from its package's directory as the real one does (the same
    file, text mode, universal newlines; FileNotFoundError when there is none) and hands anything
    else (a path, a package in a zip) to the real module, as it does every other attribute. The
    stand-in leaves ``sys.modules`` at once: ``import importlib.resources`` anywhere later loads
    the real module (and puts it where ``load_json`` looks: the ``importlib`` package's
    attribute)."""
    name = "kafka.protocol.schemas.load_json"
    if name in sys.modules or "importlib.resources" in sys.modules:
        return
    stand_in = _ResourcesStandIn("importlib.resources")
    sys.modules["importlib.resources"] = stand_in
    importlib.resources = stand_in   # where ``import importlib.resources`` binds it
    try:
        import_submodule_alone(name)    # not kafka.protocol.schemas' __init__ (the field types) first
    except ImportError:
        pass                    # a kafka-python without it: its own import reports that later
    finally:
        if sys.modules.get("importlib.resources") is stand_in:
            del sys.modules["importlib.resources"]


class _ResourcesStandIn(types.ModuleType):
    """``importlib.resources`` for ``load_json``: ``read_text`` of a file in a package's directory,
    everything else from the real module (imported then)."""

    @staticmethod
    def read_text(package: Any, resource: str, encoding: str = "utf-8", errors: str = "strict") -> str:
        directories = _package_directories(package) if os.path.basename(resource) == resource else None
        if not directories:
            text: str = _real_resources().read_text(package, resource, encoding, errors)
            return text
        path = next((p for p in (os.path.join(d, resource) for d in directories) if os.path.exists(p)),
                    os.path.join(directories[0], resource))
        with open(path, encoding=encoding, errors=errors) as f:
            return f.read()

    def __getattr__(self, name: str) -> Any:
        return getattr(_real_resources(), name)


def _real_resources() -> types.ModuleType:
    if isinstance(sys.modules.get("importlib.resources"), _ResourcesStandIn):
        del sys.modules["importlib.resources"]
    return importlib.import_module("importlib.resources")


def _package_directories(package: Any) -> list[str] | None:
    """The directories ``importlib.resources.files(package)`` reads: a namespace package's, or a
    regular package's from the file system (its ``__init__``'s); None for anything else."""
    module = importlib.import_module(package) if isinstance(package, str) else package
    spec = getattr(module, "__spec__", None)
    if spec is None or not spec.submodule_search_locations:
        return None
    if spec.origin is None or spec.origin == "namespace":    # a namespace package: its directories
        return [d for d in spec.submodule_search_locations if os.path.isdir(d)] or None
    if isinstance(spec.loader, (importlib.machinery.SourceFileLoader, importlib.machinery.SourcelessFileLoader)):
        return [os.path.dirname(spec.origin)]
    return None


def _defer_crc32c_init() -> None:
    """``crc32c`` as a module holding the C checksum at once and running the package's real
    ``__init__`` into itself on the first use of anything else (``crc32c.__version__``...), so
    that a later ``import crc32c`` in the broker process still sees the whole package."""
    if "crc32c" in sys.modules:
        return
    spec = importlib.util.find_spec("crc32c")
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["crc32c"] = pkg
    try:
        pkg.__dict__["crc32c"] = importlib.import_module("crc32c._crc32c").crc32c
    except ImportError:
        del sys.modules["crc32c"]
        return
    loader = spec.loader

    def __getattr__(name: str) -> object:
        del pkg.__dict__["__getattr__"]     # once: the real __init__ defines the rest
        loader.exec_module(pkg)
        return getattr(pkg, name)

    pkg.__dict__["__getattr__"] = __getattr__


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
