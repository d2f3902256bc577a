"""Unit tier: pure code driven directly, with no broker process and no client library: the
protocol codecs and record batches, the coordinators' state machines under a fake clock, the
metadata image and controller decisions, the partition log as a storage engine, small network
pieces (sockio, the HTTP server) on local sockets. Needs only the project's own dependencies.
About 20 s on two cores: ``./scripts/test.sh tests/unit`` (or ``-m unit``) is the quick loop."""
