"""What the ACL APIs share: the wait for their metadata writes and Kafka's answer without an authorizer.
"""
from __future__ import annotations

WRITE_TIMEOUT_MS = 30000

SECURITY_DISABLED_MESSAGE = "No Authorizer is configured."
