"""Broker tier: one Samsa broker (a child process from the ``samsa_broker`` fixture, or brokers in
the test process) driven with hand-built requests (tests/support/rawclient.py) so answers are
checked field by field: the wire protocol, error answers, faults, storage crashes and durability,
start-up, observability, the pytest plugin itself. Needs nothing outside the Python dependencies,
except the console's browser tests (chromium and chromium-driver) and a few Java-client checks
(java), which skip with the reason. A few minutes on two cores; ``-m broker``."""
