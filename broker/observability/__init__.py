"""What people and tools see of a running broker: Prometheus metrics named as Kafka's JMX metrics,
read-only views of the broker's state (``introspect.py``), the cluster as one console shows it,
and the web console with its HTTP routes on ``samsa.http.listener``.

Reads the other packages; nothing on the request path imports it.
"""
