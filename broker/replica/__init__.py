"""Replication between brokers: the replica manager (leader and follower roles per partition, the
high watermark, ISR changes, acks=all) and the fetchers that copy leaders' logs."""
