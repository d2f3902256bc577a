"""Samsa's HTTP side: one small ASGI serving mechanism (hypercorn on trio, in the broker's own
process and nursery) that the control endpoint (``samsa.control.listener``) and the metrics and
web console listener (``samsa.http.listener``) both mount their routes on. Imported only when one
of those listeners is configured, so a plain ``samsa serve`` never loads it."""
