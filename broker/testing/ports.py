"""Free loopback ports for brokers started by tests (the fixtures and the in-process broker)."""
from __future__ import annotations

import random
import socket

_given: set[int] = set()


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(ports: range) -> bool:
    socks = []
    try:
        for port in ports:
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        for s in socks:
            s.close()


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free ports, taken below the kernel's ephemeral range.

    A port from ``bind(("", 0))`` is an ephemeral one: between handing it out and the broker
    binding it, the kernel may give it to any outgoing connection as its source port (seen as
    "Address already in use" under load), and the next ``bind(0)`` in this process may return it
    again. Ports below the range are never handed out by the kernel, and this process never
    returns one twice."""
    low = _ephemeral_low()
    for _ in range(500):
        base = random.randrange(max(1024, low - 12000), low - count)
        ports = range(base, base + count)
        if _given.isdisjoint(ports) and _bindable(ports):
            _given.update(ports)
            return base
    raise OSError(f"no {count} consecutive free ports below {low}")


def free_port() -> int:
    return free_port_run(1)
