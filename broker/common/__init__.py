"""What every part of the broker may import: Kafka's configuration (``config.py``), the clock
tests can move, one shared wake-up (``notifier.py``), the ``BrokerServices`` protocol through which
parts use the broker, structlog set-up, and the way a handler answers with a closed connection.

Imports only ``protocol/`` and the standard library; nothing from another ``broker`` package.
"""
