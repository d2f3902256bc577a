"""A handler's way to answer with a closed connection instead of a response.

Kafka has requests whose only possible answer is closing the connection: an acks=0 Produce
that failed in any partition (KafkaApis.handleProduceRequest → RequestChannel.closeConnection,
"so that the producer client will know that some error has happened and will refresh its
metadata"). Raising ``CloseConnection`` from a handler (or its authorization check) makes the
server send nothing for that request and close, as Kafka does, without the warning a
malformed request gets.
"""
from __future__ import annotations


class CloseConnection(Exception):
    """Send nothing for this request; close the connection (the message says why, for the log)."""
