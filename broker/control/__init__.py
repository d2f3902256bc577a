"""Control of a running broker from outside: the control endpoint (faults, clock) on
``samsa.control.listener`` and its client (``SamsaControl``), and the health check behind
``samsa healthcheck``.

May import ``network`` (the fault stage and the HTTP server) and ``common``.
"""
