"""The composition root: ``Broker`` (broker_server.py) wires the log manager, the replica
manager, the coordinator runtimes, the metadata store and security together; ``startup.py`` runs
``samsa serve`` (listen first, load afterwards); ``serving.py`` runs a built broker until it is
stopped (every listener, then a graceful shutdown); ``api_table.py`` is the API-version table this
broker advertises.

May import every package of ``broker/`` below it; nothing below imports it (the parts see the
broker through ``broker.common.services.BrokerServices``), except for type checking.
"""
