"""The console's record decoding, filters, value rendering and chart history, without a broker:
transactional batches classed as a read_committed consumer would (aborted until the producer's
abort marker, open at or above the LSO), a chunk cut mid-batch read up to its last whole batch,
JSON / text / hex chosen by what reads, and rates from consecutive samples."""
from __future__ import annotations

import struct

from broker.observability import record_source as rs
from broker.observability.history import History, Sample
from broker.observability.records_view import parse_time, render_bytes
from protocol import records as rb


def _batch(base: int, records: list[tuple[bytes | None, bytes | None]], pid: int = -1, txn: bool = False) -> bytes:
    return bytes(rb.build_batch(records, base_offset=base, timestamp_ms=1000, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                                base_sequence=0 if pid >= 0 else -1, transactional=txn))


def _marker(base: int, pid: int, commit: bool) -> bytes:
    return bytes(rb.build_batch([(struct.pack(">hh", 0, 1 if commit else 0), struct.pack(">hi", 0, 0))],
                                base_offset=base, timestamp_ms=1000, producer_id=pid, producer_epoch=0,
                                transactional=True, control=True))


def test_decode_classes_transactions_like_a_read_committed_consumer() -> None:
    data = (_batch(0, [(b"a", b"plain")]) + _batch(1, [(b"k", b"aborted-1"), (b"k", b"aborted-2")], pid=7, txn=True)
            + _batch(3, [(b"k", b"committed")], pid=8, txn=True) + _marker(4, 7, commit=False)
            + _marker(5, 8, commit=True) + _batch(6, [(b"k", b"after abort")], pid=7, txn=True)
            + _marker(7, 7, commit=True) + _batch(8, [(b"k", b"open")], pid=9, txn=True))
    chunk = rs.Chunk(data, high_watermark=9, last_stable_offset=8, log_start_offset=0, aborted=[(7, 1)])
    records, after = rs.decode(chunk, 0)
    assert after == 9
    assert [(r.offset, r.value, r.status) for r in records] == [
        (0, b"plain", ""), (1, b"aborted-1", "aborted"), (2, b"aborted-2", "aborted"), (3, b"committed", "committed"),
        (6, b"after abort", "committed"), (8, b"open", "open")]
    assert [r.offset for r in records if rs.visible(r, read_committed=True)] == [0, 3, 6]
    assert records[1].producer_id == 7 and records[1].sequence == 0 and records[2].sequence == 1


def test_decode_stops_at_a_cut_batch_and_at_the_high_watermark() -> None:
    whole = _batch(0, [(b"a", b"1")]) + _batch(1, [(b"b", b"2")])
    records, after = rs.decode(rs.Chunk(whole + _batch(2, [(b"c", b"3")])[:-5], 99, 99, 0, []), 0)
    assert [r.offset for r in records] == [0, 1] and after == 2
    records, after = rs.decode(rs.Chunk(whole, 1, 1, 0, []), 0)
    assert [r.offset for r in records] == [0] and after == 1


def _record(key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes | None]]) -> rs.Record:
    return rs.Record(0, 0, 0, key, value, headers, False, -1, -1, -1, False, "", 0, 0, "none", 0)


def test_filters() -> None:
    r = _record(b"customer-42", b'{"total": 12}', [("trace", b"abc-123"), ("empty", None)])
    assert rs.Filter(key="customer-42").matches(r) and not rs.Filter(key="customer-4").matches(r)
    assert rs.Filter(value='"total"').matches(r) and not rs.Filter(value="missing").matches(r)
    assert rs.Filter(header="trace").matches(r) and rs.Filter(header="trace=c-12").matches(r)
    assert rs.Filter(header="empty").matches(r) and not rs.Filter(header="empty=x").matches(r)
    assert not rs.Filter(header="other").matches(r)
    assert rs.Filter(key="customer-42", value="total").matches(r) and not rs.Filter(key="x", value="total").matches(r)
    assert rs.Filter(key="").matches(_record(None, b"v", [])) and not rs.Filter(key="k").matches(_record(None, b"v", []))


def test_values_render_as_json_text_or_hex() -> None:
    assert render_bytes(b'{"a":[1,2]}', full=True) == \
        '<pre class="v json" data-kind="json">{\n  &quot;a&quot;: [\n    1,\n    2\n  ]\n}</pre>'
    assert 'data-kind="text">plain &lt;text&gt;<' in render_bytes(b"plain <text>")
    assert 'data-kind="hex">00 01 ff<' in render_bytes(b"\x00\x01\xff")
    assert 'data-kind="text">{not json<' in render_bytes(b"{not json")
    assert "(+100 chars)" in render_bytes(b"x" * 300) and "null" in render_bytes(None)


def test_timestamps_parse_as_utc_or_milliseconds() -> None:
    assert parse_time("1700000000123") == 1_700_000_000_123
    assert parse_time("2023-11-14T22:13:20.123Z") == parse_time("2023-11-14T22:13:20.123") == 1_700_000_000_123
    assert parse_time("2023-11-15T07:13:20.123+09:00") == 1_700_000_000_123
    assert parse_time("yesterday") is None and parse_time("") is None


def test_history_rates_and_lag() -> None:
    h = History(size=3)
    for i, (msgs, lag) in enumerate([(0, 5), (10, 3), (40, 0), (40, 7)]):
        h.add(Sample(1000 * i, {"t": (msgs, msgs * 100, 0)}, {"g": {("t", 0): lag, ("t", 1): 1}}))
    assert [s.at_ms for s in h.samples] == [1000, 2000, 3000]       # the oldest fell out
    assert h.topic_rates("t")["messages in/s"] == [(2000, 30.0), (3000, 0.0)]
    assert h.topic_rates("t")["bytes in/s"] == [(2000, 3000.0), (3000, 0.0)]
    assert h.group_lag("g") == {"total": [(1000, 4.0), (2000, 1.0), (3000, 8.0)],
                                "t-0": [(1000, 3.0), (2000, 0.0), (3000, 7.0)],
                                "t-1": [(1000, 1.0), (2000, 1.0), (3000, 1.0)]}
    assert h.group_lag("other") == {}
