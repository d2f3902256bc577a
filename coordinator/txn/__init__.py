"""The transaction coordinator of one ``__transaction_state`` partition, its record formats, and
a partition's idempotent-producer state (Kafka's ProducerStateManager). Pure. May import
``protocol/`` and ``coordinator.hashing``.
"""
