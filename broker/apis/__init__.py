"""API handlers: one module per Kafka API, named after it (``ApiKey.DESCRIBE_CONFIGS`` is
``describe_configs.py``), each opening with the versions it implements and their quirks, and
holding the API's handler (``@handles``) and authorization rule (``@authorizes``).

Importing this package imports every API module (found by discovery, so adding an API is its
schema if kafka-python lacks it, its row in protocol/api_versions.py, and its module here), which
registers them with broker/network/dispatch.py. Code several API modules share lives in
``shared/``; an API module never imports another API module.
"""
from __future__ import annotations

import importlib
import pkgutil


def _import_api_modules() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            importlib.import_module(f"{__name__}.{info.name}")


_import_api_modules()
