"""Top-level pytest configuration: Samsa's broker fixtures for this repository's tests.

Users get the same fixtures in their own suites through the ``samsa`` pytest plugin.
"""
from broker.testing import samsa_broker, samsa_broker_session, samsa_topic  # noqa: F401
