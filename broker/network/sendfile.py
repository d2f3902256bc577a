"""Sending an answer whose record bytes stay in the segment files.

Fetch answers arrive here as parts (protocol/splice.py): small encoded pieces and
FileRegions. Regions go out with ``sendfile``, so the page cache feeds the socket directly
and the bytes never pass through Python. (Corking the socket around an answer was tried: with
TCP_NODELAY set, Linux then held every answer for the 200 ms cork timeout.)
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import trio

from broker.log.region import FileRegion

_SENDFILE = hasattr(os, "sendfile")


async def send_parts(stream: trio.abc.Stream, parts: Sequence[bytes | FileRegion]) -> None:
    """Send one answer's parts in order; every region is closed, sent or not."""
    try:
        for part in parts:
            if isinstance(part, FileRegion):
                await _send_region(stream, part)
            else:
                await stream.send_all(part)
    finally:
        for part in parts:
            if isinstance(part, FileRegion):
                part.close()


async def _send_region(stream: trio.abc.Stream, region: FileRegion) -> None:
    if not _SENDFILE or not isinstance(stream, trio.SocketStream):
        # TLS: the bytes must pass through the SSL object, so they are read and copied
        await stream.send_all(region.read())
        return
    sock = stream.socket
    out = sock.fileno()
    offset, remaining = region.position, region.length
    while remaining:
        try:
            sent = os.sendfile(out, region.fd, offset, remaining)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except OSError as exc:
            raise trio.BrokenResourceError(f"sendfile failed: {exc}") from exc
        if sent == 0:
            # the file is shorter than the length already announced: the frame cannot be
            # completed, so the connection must go
            raise trio.BrokenResourceError("segment file ended inside a fetch answer")
        offset += sent
        remaining -= sent
    await trio.lowlevel.checkpoint()
