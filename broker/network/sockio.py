"""Plain-TCP reads and writes that cost one system call when they can complete at once.

trio's socket methods yield to the scheduler after every successful call (``_try_sync`` ends
in ``cancel_shielded_checkpoint``), and its ``recv_into`` tries the read before waiting, so a
connection that sends one small request at a time paid per request: a read, a yield, another
read that fails with EAGAIN, then the wait; and for the answer a send and another yield.
Here a write that the socket buffer takes whole returns without yielding, and the reader
waits for readability first when its last read drained the socket. The connection's task
(broker/network/listeners.py, ``_serve_socket``) still yields at least once per read and between
frames read together, so no connection can starve the others. Plain sockets only: TLS streams go
through trio's SSLStream.
"""
from __future__ import annotations

import os

import trio


async def send_all(stream: trio.abc.Stream, data: bytes | bytearray | memoryview) -> None:
    """``stream.send_all(data)``; on a plain socket, first one ``write`` without yielding."""
    if type(stream) is trio.SocketStream and len(data):
        try:
            sent = os.write(stream.socket.fileno(), data)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise trio.BrokenResourceError(f"send failed: {exc}") from exc
        if sent == len(data):
            return
        data = memoryview(data)[sent:]
    await stream.send_all(data)


async def recv_into(sock: trio.socket.SocketType, into: memoryview, drained: bool) -> int:
    """Read into ``into``; returns the count (0 at end of stream). ``drained``: the previous
    read left the socket empty (it returned less than it was offered), so wait for
    readability before reading instead of reading into EAGAIN first."""
    fd = sock.fileno()
    if drained:
        await trio.lowlevel.wait_readable(sock)
    while True:
        try:
            return os.readv(fd, [into])
        except BlockingIOError:
            await trio.lowlevel.wait_readable(sock)
