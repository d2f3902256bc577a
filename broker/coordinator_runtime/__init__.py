"""The runtimes around the pure coordinators of ``coordinator/`` (Kafka's ``CoordinatorRuntime``):
one coordinator per partition of ``__consumer_offsets`` / ``__transaction_state`` that this broker
leads, their loading by replay, their appends to the log, their timers, and where a group or a
transactional id is coordinated (``placement.py``).

May import ``coordinator/``, ``common``, ``log``, ``replica``, ``metadata``; never ``apis``.
"""
