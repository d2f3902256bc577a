"""Free loopback ports for brokers started by tests (the fixtures and the in-process broker)."""
from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free ports, taken below the kernel's ephemeral range:
    ``free_port() + 1`` may be any client connection's source port a moment later."""
    import random
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        base = random.randrange(max(1024, low - 12000), low - count)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise OSError(f"no {count} consecutive free ports below {low}")
