"""The network path of a Kafka request: trio listeners and connections (``listeners.py``), socket
I/O (``sockio.py``, ``sendfile.py``), one frame's decode, authorization and routing to its API
handler (``dispatch.py``), the fault stage tests arm (``faults.py``), the per-request log and
counters, idle-connection expiry, and the small ASGI server the HTTP listeners share.

May import ``common``, ``log``, ``security``, ``metadata``; handlers register with ``dispatch``
and are never imported from here.
"""
