"""The group coordinator of one ``__consumer_offsets`` partition (Kafka's GroupCoordinatorShard):
classic groups, KIP-848 consumer groups and their assignors, committed offsets, and the byte
formats of their records. Pure: no I/O, no clock (time is passed in). May import ``protocol/`` and
``coordinator.hashing``.
"""
