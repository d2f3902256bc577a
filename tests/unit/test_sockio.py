"""broker/network/sockio.py: a write the socket cannot take at once is finished by trio, reads that
wait first once the socket is drained still see every byte, and the end of the stream."""
from __future__ import annotations

import socket

import pytest
import trio

from broker.network import sockio


def test_large_write_through_a_small_buffer_arrives_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    payload = bytes(range(256)) * 8192          # 2 MiB, far more than the socket buffers hold
    rest: list[int] = []                        # what trio's send_all was left to send
    trio_send_all = trio.SocketStream.send_all

    async def counting_send_all(self: trio.SocketStream, data: bytes | memoryview) -> None:
        rest.append(len(data))
        await trio_send_all(self, data)

    monkeypatch.setattr(trio.SocketStream, "send_all", counting_send_all)

    async def main() -> bytes:
        a, b = trio.socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        sender = trio.SocketStream(a)
        got = bytearray()

        async def read_all() -> None:
            buf = bytearray(65536)
            drained = False
            while True:
                with memoryview(buf) as view:
                    n = await sockio.recv_into(b, view, drained)
                if not n:
                    return
                drained = n < len(buf)
                got.extend(buf[:n])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_all)
            await sockio.send_all(sender, payload)   # the first write is partial: trio sends the rest
            await sender.aclose()                    # end of stream: the reader's read returns 0
        b.close()
        return bytes(got)

    assert trio.run(main) == payload
    assert len(rest) == 1 and 0 < rest[0] < len(payload)   # the first write was partial


def test_small_write_returns_without_waiting_and_is_read() -> None:
    async def main() -> bytes:
        a, b = trio.socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        stream = trio.SocketStream(a)
        await sockio.send_all(stream, b"\x00\x00\x00\x04ping")
        buf = bytearray(64)
        with memoryview(buf) as view:
            n = await sockio.recv_into(b, view, drained=True)   # waits for readability, then reads
        a.close()
        b.close()
        return bytes(buf[:n])

    assert trio.run(main) == b"\x00\x00\x00\x04ping"
