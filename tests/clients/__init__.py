"""Clients tier: real client libraries against a Samsa broker, unchanged: kafka-python,
confluent-kafka (librdkafka), aiokafka, kcat, the Java client (kafka-clients jars from PyPI
wheels, compiled at test time; needs java/javac) and Spark (pyspark; the Kafka connector's jars).
Consumer groups, transactions, share groups, security (TLS, SASL, ACLs), storage. Tests whose
tool is missing skip with the reason. The longest tier after the cluster tier: several minutes,
more on a cold Java/Spark cache; ``-m clients``."""
