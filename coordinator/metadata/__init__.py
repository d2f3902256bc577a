"""Cluster metadata as Kafka's KRaft has it: the metadata records, the immutable image they replay
into (``MetadataImage``/``MetadataDelta``), and the controller's decisions as pure functions of an
image. Pure. May import ``protocol/``.
"""
