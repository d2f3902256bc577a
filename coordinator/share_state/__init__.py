"""Kafka's share coordinator (KIP-932) as a pure state machine: the state of every share partition
hashed onto one ``__share_group_state`` partition, kept as ShareSnapshot / ShareUpdate records."""
