"""The log manager's topic file (broker/log/topic_file.py): a snapshot line and the changes after
it, each acknowledged change durable; start-up replays them and cuts what a crash tore."""
from __future__ import annotations

import json
import os
from pathlib import Path

from broker.common.config import BrokerConfig
from broker.log import manager as manager_mod
from broker.log.manager import METADATA_FILE, LogManager
from broker.log.topic_file import read_topic_file


def _manager(path: Path) -> LogManager:
    lm = LogManager(BrokerConfig({"log.dirs": str(path)}))
    lm.load()
    return lm


def test_changes_are_appended_after_the_snapshot_and_replayed_at_start_up(tmp_path: Path) -> None:
    lm = _manager(tmp_path)
    a = lm.create_topic("a", 2)              # the file's first change: a snapshot
    lm.create_topic("b", 1, {"cleanup.policy": "compact"})
    lm.alter_configs("a", {"retention.ms": "1000"})
    lm.add_partitions("a", 3)
    lm.delete_topic("b")
    lines = (tmp_path / METADATA_FILE).read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 1 + 4 + 1      # snapshot, four changes, final newline
    assert [next(iter(json.loads(x))) for x in lines[1:-1]] == ["put", "put", "put", "remove"]
    lm.shutdown()
    again = _manager(tmp_path)
    assert sorted(again.topics) == ["a"]
    t = again.topics["a"]
    assert (t.topic_id, t.partition_count, t.configs) == (a.topic_id, 3, {"retention.ms": "1000"})
    assert not (tmp_path / "b-0").exists()
    again.create_topic("c", 1)               # appended to the existing file, no rewrite
    assert len((tmp_path / METADATA_FILE).read_bytes().split(b"\n")) == 1 + 5 + 1
    again.shutdown()


def test_a_torn_change_is_cut_off_and_the_file_rewritten(tmp_path: Path) -> None:
    lm = _manager(tmp_path)
    lm.create_topic("a", 1)
    lm.create_topic("b", 1)
    lm.shutdown()
    path = tmp_path / METADATA_FILE
    with open(path, "ab") as f:              # a crash in the middle of the next change
        f.write(b'{"put": {"name": "c", "id": "')
    meta, changes, rewrite = read_topic_file(str(path))
    assert ([t["name"] for t in meta["topics"]], changes, rewrite) == (["a", "b"], 1, True)
    again = _manager(tmp_path)
    assert sorted(again.topics) == ["a", "b"]
    assert path.read_bytes().count(b"\n") == 1   # rewritten: one snapshot line
    again.create_topic("c", 1)
    again.shutdown()
    assert sorted(_manager(tmp_path).topics) == ["a", "b", "c"]


def test_the_single_object_layout_of_earlier_versions_is_read_and_rewritten(tmp_path: Path) -> None:
    lm = _manager(tmp_path)
    t = lm.create_topic("old", 2, {"retention.ms": "5"})
    lm.shutdown()
    path = tmp_path / METADATA_FILE
    path.write_text(json.dumps({"cluster_id": lm.cluster_id, "topics": [
        {"name": "old", "id": str(t.topic_id), "partitions": 2, "configs": {"retention.ms": "5"}}]}))
    again = _manager(tmp_path)
    assert (again.topics["old"].topic_id, again.topics["old"].partition_count) == (t.topic_id, 2)
    assert path.read_bytes().endswith(b"\n") and path.read_bytes().count(b"\n") == 1
    again.delete_topic("old")
    again.shutdown()
    assert _manager(tmp_path).topics == {}


def test_the_file_is_compacted_after_many_changes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(manager_mod, "COMPACT_AFTER", 3)
    lm = _manager(tmp_path)
    for i in range(8):
        lm.create_topic(f"t{i}", 1)
    lines = (tmp_path / METADATA_FILE).read_bytes().split(b"\n")
    assert len(lines) - 2 <= 3                 # never more than COMPACT_AFTER changes after the snapshot
    lm.shutdown()
    assert sorted(_manager(tmp_path).topics) == [f"t{i}" for i in range(8)]


def test_a_failed_append_rewrites_the_file_at_the_next_change(tmp_path: Path, monkeypatch) -> None:
    lm = _manager(tmp_path)
    lm.create_topic("a", 1)

    def broken(fd: int) -> None:
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(os, "fdatasync", broken)
    try:
        lm.create_topic("b", 1)
    except OSError:
        pass
    else:
        raise AssertionError("the failed sync must reach the caller")
    monkeypatch.undo()
    assert not lm.topic_file.is_open
    lm.create_topic("c", 1)                   # a full snapshot, including b
    assert (tmp_path / METADATA_FILE).read_bytes().count(b"\n") == 1
    lm.shutdown()
    assert sorted(_manager(tmp_path).topics) == ["a", "b", "c"]


def test_an_empty_topic_file_reads_as_no_topics_and_is_rewritten_before_any_change(tmp_path: Path) -> None:
    (tmp_path / METADATA_FILE).write_bytes(b"")
    assert read_topic_file(str(tmp_path / METADATA_FILE)) == ({"topics": []}, 0, True)


def test_changes_written_while_a_sync_runs_share_the_next_one_in_a_worker_thread(tmp_path: Path, monkeypatch) -> None:
    """wait_durable: a slow last sync sends the next to a worker thread; changes written while
    it runs are covered by one more sync (group commit), and a failed one reaches every waiter."""
    import threading
    import trio
    from broker.log import topic_file as tf

    lm = _manager(tmp_path)
    lm.create_topic("a", 1)
    syncs: list[str] = []
    real = os.fdatasync

    def counted(fd: int) -> None:
        syncs.append(threading.current_thread().name)
        real(fd)
    monkeypatch.setattr(os, "fdatasync", counted)

    async def change(name: str) -> None:
        lm.create_topic(name, 1, durable=False)
        await lm.topics_durable()

    async def main() -> None:
        monkeypatch.setattr(tf, "INLINE_SYNC_BELOW_S", 0.0)   # as if the disk were slow: worker threads
        async with trio.open_nursery() as n:
            for name in ("b", "c", "d", "e"):
                n.start_soon(change, name)
        assert lm.topic_file.synced == lm.topic_file.written
        assert 1 <= len(syncs) <= 2 and threading.main_thread().name not in syncs
        syncs.clear()
        monkeypatch.setattr(tf, "INLINE_SYNC_BELOW_S", 1.0)   # a fast disk: inline, no thread
        await change("f")
        assert syncs == [threading.main_thread().name]

        def broken(fd: int) -> None:
            raise OSError(5, "Input/output error")
        monkeypatch.setattr(os, "fdatasync", broken)
        monkeypatch.setattr(tf, "INLINE_SYNC_BELOW_S", 0.0)
        failures = []

        async def failing(name: str) -> None:
            try:
                await change(name)
            except OSError:
                failures.append(name)
        async with trio.open_nursery() as n:
            n.start_soon(failing, "g")
            n.start_soon(failing, "h")
        assert sorted(failures) == ["g", "h"] and not lm.topic_file.is_open

    trio.run(main)
    monkeypatch.undo()
    assert tf.INLINE_SYNC_BELOW_S <= 0.001
    lm.create_topic("i", 1)                          # the next change rewrites the file whole
    lm.shutdown()
    assert sorted(_manager(tmp_path).topics) == list("abcdefghi")


def test_a_deleted_topics_directory_goes_only_once_its_removal_is_durable(tmp_path: Path, monkeypatch) -> None:
    """Kafka's order: the topic leaves the topic file durably, then its files go. A removal line
    whose sync fails leaves the renamed directory for start-up to remove."""
    import trio

    lm = _manager(tmp_path)
    lm.create_topic("a", 1)
    lm.create_topic("b", 1)
    lm.create_topic("c", 1)

    def renamed(topic: str) -> list[str]:
        return [d for d in os.listdir(tmp_path) if d.startswith(f"{topic}-0.") and d.endswith("-delete")]

    async def main() -> None:
        async with trio.open_nursery() as n:
            await n.start(lm.run_file_deleter)
            lm.delete_topic("b", durable=False)
            await lm.topics_durable()
            await trio.sleep(0.3)
            assert not renamed("b") and not (tmp_path / "b-0").exists()

            def broken(fd: int) -> None:
                raise OSError(5, "Input/output error")
            monkeypatch.setattr(os, "fdatasync", broken)
            lm.delete_topic("c", durable=False)
            await trio.sleep(0.3)
            assert len(renamed("c")) == 1           # the removal is not durable: the files stay
            n.cancel_scope.cancel()

    trio.run(main)
    monkeypatch.undo()
    lm.shutdown()
    again = _manager(tmp_path)                      # the change was written: c is gone, and so is its directory
    assert sorted(again.topics) == ["a"] and not renamed("c")
    again.shutdown()
