"""FrameDecoder cuts frames straight from its scratch read when nothing is pending
(protocol/frame.py): any split of a stream into reads gives the same frames, in order."""
from __future__ import annotations

import random
import struct

import pytest

from protocol.frame import FrameDecoder, FrameError


def _stream(rng: random.Random, count: int) -> tuple[bytes, list[bytes]]:
    payloads = [rng.randbytes(rng.choice([8, 9, 40, 300, 5000, 70_000, 200_000])) for _ in range(count)]
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads), payloads


def _read(decoder: FrameDecoder, data: bytes, rng: random.Random) -> list[bytes]:
    frames: list[bytes] = []
    pos = 0
    while pos < len(data):
        with decoder.buffer() as into:
            n = min(len(into), len(data) - pos, rng.choice([1, 3, 4, 7, 100, 4096, 1 << 20]))
            into[:n] = data[pos:pos + n]
        pos += n
        frames += [bytes(f) for f in decoder.consumed(n)]
    return frames


@pytest.mark.parametrize("seed", range(30))
def test_any_split_into_reads_gives_the_frames_in_order(seed: int) -> None:
    rng = random.Random(seed)
    data, payloads = _stream(rng, 40)
    decoder = FrameDecoder(1 << 20, scratch=1 << 14, own_buffer_from=1 << 12, own_buffer_to=1 << 17)
    assert _read(decoder, data, rng) == payloads
    assert decoder.pending == 0
    fed = FrameDecoder(1 << 20, scratch=1 << 14, own_buffer_from=1 << 12, own_buffer_to=1 << 17)
    assert [bytes(f) for f in fed.feed(data)] == payloads


def test_a_bad_size_in_the_scratch_read_is_a_frame_error() -> None:
    decoder = FrameDecoder(100)
    with decoder.buffer() as into:
        into[:12] = struct.pack(">i", 8) + bytes(8)
    assert decoder.consumed(12) == [bytes(8)]
    for bad in (7, 101, -1):
        d = FrameDecoder(100)
        with d.buffer() as into:
            into[:4] = struct.pack(">i", bad)
        with pytest.raises(FrameError):
            d.consumed(4)
