"""Kafka's coordinators as pure, deterministic state machines: no sockets, no clock, no I/O.

``step.py`` is the contract every one of them keeps: the ``Coordinator`` protocol (``handle``,
``tick``, ``next_deadline``, ``replay``/``replay_marker``, ``load_complete``, ``unload``) and the
``Step`` each call returns (answers to release, records to append, marker jobs). ``group/``,
``txn/`` and ``share/`` implement it; ``metadata/`` holds the cluster metadata records, image and
controller, which follow the same replay shape. The runtimes around them live in
``broker/coordinator_runtime/``.

May import ``protocol/`` and kafka-python's message classes; never ``broker/``.
"""
