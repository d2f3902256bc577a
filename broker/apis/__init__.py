"""API handlers: one module per Kafka API, named after it (``ApiKey.DESCRIBE_CONFIGS`` is
``describe_configs.py``), each opening with the versions it implements and their quirks, and
holding the API's handler (``@handles``) and authorization rule (``@authorizes``).

Nothing is imported with this package: broker/network/dispatch.py imports an API's module when its
API is first requested (``api_module``: the module named after the API), which registers its
handler and rule. So adding an API is its schema if kafka-python lacks it, its row in
protocol/api_versions.py, and its module here; start-up refuses to serve an advertised API without
a module, and tests/unit/test_lazy_loading.py imports every module and checks each registers its
handler and authorization rule. Code several API modules share lives in ``shared/``; an API module
never imports another API module.
"""
from __future__ import annotations

import importlib
import pkgutil


def import_api_modules() -> None:
    """Import every API module now (what a first request of each API would do): for tools and
    tests that look at every handler, and for warming a broker up once it serves."""
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            importlib.import_module(f"{__name__}.{info.name}")
