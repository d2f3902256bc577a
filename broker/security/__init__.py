"""Kafka security: TLS listeners, SASL, SCRAM credentials and ACLs, the authorizer."""
