"""Where Samsa's security and connection handling must behave exactly as a Kafka broker's:
an acks=0 Produce that is denied closes the connection (KafkaApis.handleProduceRequest),
OffsetFetch answers denied topics per partition (KafkaApis.handleOffsetFetchRequest)."""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AclOperation, AclPermissionType, ResourceType
from kafka.protocol.producer import ProduceRequest

from tests.support.security_support import SecureBroker
from tests.support.acl_support import JAAS, DictClient, allow, build_message, create_acls, plain_conf, produce_errors, unique_name
from tests.support.wire import batch, list_offset

USERS = ("admin", "alice", "bob", "carol", "dave")
GAP_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
            'password="admin-secret" ' + " ".join(f'user_{u}="{u}-secret"' for u in USERS) + ";")
OVERRIDES = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": GAP_JAAS,
    "auto.create.topics.enable": "true",
}


@pytest.fixture(scope="module")
def gap_broker(tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("gaps") / "data", ["SASL_PLAINTEXT"], OVERRIDES).start()
    try:
        yield b
    finally:
        b.stop()


def _login(broker, user: str) -> DictClient:
    """A raw connection authenticated as ``user`` (PLAIN) whose requests are built from dicts."""
    c = DictClient(broker.bootstrap("SASL_PLAINTEXT"))
    c.request(17, 1, mechanism="PLAIN")
    assert c.request(36, 2, auth_bytes=f"\0{user}\0{user}-secret".encode()).error_code == 0
    return c


def _partition_data(topic: str, n: int) -> ProduceRequest.TopicProduceData:
    return ProduceRequest.TopicProduceData(name=topic, partition_data=[
        ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=bytes(batch(n)))])


def test_denied_acks_zero_produce_closes_after_writing_the_allowed(gap_broker) -> None:
    """acks=0 naming a writable and an unwritable topic: the writable one is appended, then the
    connection closes with nothing sent (acks=1 answers TOPIC_AUTHORIZATION_FAILED instead)."""
    ok, denied = unique_name("a0-ok-"), unique_name("a0-no-")
    for t in (ok, denied):
        assert produce_errors(plain_conf(gap_broker, "admin"), t, 1) == [None]
    create_acls(gap_broker, allow(ResourceType.TOPIC, ok, AclOperation.WRITE, principal="User:bob"))
    with _login(gap_broker, "bob") as c:
        r = c.request(0, 9, transactional_id=None, acks=1, timeout_ms=5000,
                      topic_data=[dict(name=denied, partition_data=[dict(index=0, records=bytes(batch(1)))])])
        assert r.responses[0].partition_responses[0].error_code == 29   # the connection stays
        c.send(0, 9, transactional_id=None, acks=0, timeout_ms=5000,
               topic_data=[_partition_data(ok, 2), _partition_data(denied, 3)])
        assert c.is_closed()
    with _login(gap_broker, "bob") as c:    # allowed topics alone: no answer, and the connection stays open
        c.send(0, 9, transactional_id=None, acks=0, timeout_ms=5000, topic_data=[_partition_data(ok, 4)])
        assert not c.is_closed(0.3)
    with _login(gap_broker, "admin") as c:
        assert list_offset(c, ok, -1).offset == 1 + 2 + 4
        assert list_offset(c, denied, -1).offset == 1


def _commit(broker, group: str, offsets: dict[str, int]) -> None:
    with _login(broker, "admin") as c:
        r = c.request(8, 8, group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                      topics=[dict(name=t, partitions=[dict(partition_index=0, committed_offset=o, committed_leader_epoch=-1,
                                                            committed_metadata="m")]) for t, o in offsets.items()])
        assert [p.error_code for t in r.topics for p in t.partitions] == [0] * len(offsets)


def test_offset_fetch_answers_denied_topics_per_partition(gap_broker) -> None:
    """KafkaApis.handleOffsetFetchRequest, both paths (v1-7 one group, v8+ groups): a named
    topic without DESCRIBE answers TOPIC_AUTHORIZATION_FAILED with offset -1; with all topics
    requested (null) it is left out; a group without DESCRIBE answers GROUP_AUTHORIZATION_FAILED."""
    ok, denied, group, other = unique_name("of-ok-"), unique_name("of-no-"), unique_name("of-g-"), unique_name("of-x-")
    for t in (ok, denied):
        assert produce_errors(plain_conf(gap_broker, "admin"), t, 1) == [None]
    _commit(gap_broker, group, {ok: 5, denied: 7})
    create_acls(gap_broker, allow(ResourceType.TOPIC, ok, AclOperation.DESCRIBE, principal="User:bob"),
                allow(ResourceType.GROUP, group, AclOperation.DESCRIBE, principal="User:bob"))
    named = [dict(name=ok, partition_indexes=[0]), dict(name=denied, partition_indexes=[0, 1])]
    want = {(ok, 0): (5, 0), (denied, 0): (-1, 29), (denied, 1): (-1, 29)}

    def offsets(topics) -> dict:
        return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in topics for p in t.partitions}
    with _login(gap_broker, "bob") as c:
        for v in (1, 5, 7):
            r = c.request(9, v, group_id=group, topics=named, require_stable=False)
            assert offsets(r.topics) == want, v
            metadata = {t.name: p.metadata for t in r.topics for p in t.partitions}
            assert metadata == {ok: "m", denied: ""}
            if v >= 2:
                r = c.request(9, v, group_id=group, topics=None, require_stable=False)
                assert (r.error_code, offsets(r.topics)) == (0, {(ok, 0): (5, 0)})
        for v in (8, 9):
            r = c.request(9, v, require_stable=False, groups=[
                dict(group_id=group, topics=named), dict(group_id=other, topics=named),
                dict(group_id=group + "-all", topics=None)] + ([dict(group_id=group, member_id=None, member_epoch=-1,
                                                                   topics=None)] if v == 9 else []))
            by_group = [(g.group_id, g.error_code, offsets(g.topics)) for g in r.groups]
            assert by_group[0] == (group, 0, want), v
            assert sorted(by_group[1:]) == sorted(
                [(other, 30, {}), (group + "-all", 30, {})] + ([(group, 0, {(ok, 0): (5, 0)})] if v == 9 else [])), v


def test_offset_fetch_denials_reach_real_clients(gap_broker) -> None:
    """confluent-kafka's list_consumer_group_offsets and kafka-python's committed() see the
    per-partition TOPIC_AUTHORIZATION_FAILED (not a silently missing offset)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, TopicPartition
    from confluent_kafka.admin import AdminClient
    from kafka import KafkaConsumer, TopicPartition as KTP
    from kafka.errors import TopicAuthorizationFailedError
    ok, denied, group = unique_name("ofc-ok-"), unique_name("ofc-no-"), unique_name("ofc-g-")
    for t in (ok, denied):
        assert produce_errors(plain_conf(gap_broker, "admin"), t, 1) == [None]
    _commit(gap_broker, group, {ok: 3, denied: 4})
    create_acls(gap_broker, allow(ResourceType.TOPIC, ok, AclOperation.DESCRIBE, principal="User:bob"),
                allow(ResourceType.GROUP, group, AclOperation.DESCRIBE, principal="User:bob"))
    bob = AdminClient(plain_conf(gap_broker, "bob"))
    fut = bob.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
        group, [TopicPartition(ok, 0), TopicPartition(denied, 0)])])[group]
    got = {tp.topic: (tp.offset, tp.error.code() if tp.error else None) for tp in fut.result(15).topic_partitions}
    assert got == {ok: (3, None), denied: (-1001, KafkaError.TOPIC_AUTHORIZATION_FAILED)}
    kc = KafkaConsumer(bootstrap_servers=gap_broker.bootstrap("SASL_PLAINTEXT"), security_protocol="SASL_PLAINTEXT",
                       sasl_mechanism="PLAIN", sasl_plain_username="bob", sasl_plain_password="bob-secret",
                       group_id=group, enable_auto_commit=False)
    try:
        assert kc.committed(KTP(ok, 0)) == 3
        with pytest.raises(TopicAuthorizationFailedError):
            kc.committed(KTP(denied, 0))
    finally:
        kc.close()


IDLE_MS = 600


@pytest.fixture(scope="module")
def idle_broker(tmp_path_factory):
    b = SecureBroker(tmp_path_factory.mktemp("idle") / "data", ["SASL_PLAINTEXT"],
                     {"sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                      "connections.max.idle.ms": str(IDLE_MS)}).start()
    try:
        yield b
    finally:
        b.stop()


def _close_times(clients: list, since: list[float], limit: float = 4.0) -> list[float]:
    """Seconds from each client's last traffic (``since``) until the broker closed it (inf: never)."""
    times = [float("inf")] * len(clients)
    start = time.monotonic()
    while time.monotonic() - start < limit and float("inf") in times:
        for i, c in enumerate(clients):
            if times[i] == float("inf") and c.is_closed(0.02):
                times[i] = time.monotonic() - since[i]
    return times


def test_idle_connections_are_closed_on_every_listener(idle_broker) -> None:
    """connections.max.idle.ms (Kafka's Selector idle expiry): a quiet connection is closed,
    whether it never spoke, never authenticated, or is authenticated; PLAINTEXT or SASL; each
    about the idle time after its own last traffic."""
    from tests.support.rawclient import RawClient
    md = dict(topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    silent = RawClient(idle_broker.bootstrap_servers)
    since = [time.monotonic()]        # the broker accepted it no earlier than this
    with silent, RawClient(idle_broker.bootstrap("SASL_PLAINTEXT")) as unauthenticated, \
            RawClient(idle_broker.bootstrap_servers) as plain, _login(idle_broker, "alice") as sasl:
        assert _handshake_only(unauthenticated) == 0
        since.append(time.monotonic())
        assert plain.request(3, 12, **md).brokers
        since.append(time.monotonic())
        assert sasl.request(3, 12, **md).brokers
        since.append(time.monotonic())
        times = _close_times([silent, unauthenticated, plain, sasl], since)
        # the broker's last traffic precedes the client's by a scheduling hiccup at most: 0.1 s slack
        assert all(IDLE_MS / 1000 - 0.1 <= t < 3.0 for t in times), times


def _handshake_only(c) -> int:
    return c.request(17, 1, mechanism="PLAIN").error_code


def test_talking_connections_and_long_requests_stay_open(idle_broker) -> None:
    """Traffic keeps a connection open; a request answered after more than the idle time (a Fetch
    long poll) is not idleness; stock clients reconnect after an idle close."""
    from kafka import KafkaProducer
    from tests.support.rawclient import RawClient
    from tests.support.wire import create, fetch
    md = dict(topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    with RawClient(idle_broker.bootstrap_servers) as c:
        for _ in range(8):                        # 1.6 s of talking every 200 ms
            assert c.request(3, 12, **md).brokers
            time.sleep(0.2)
        create(c, "idle-lp")
        t0 = time.monotonic()
        assert fetch(c, "idle-lp", 0, max_wait_ms=int(IDLE_MS * 1.8)).error_code == 0
        assert time.monotonic() - t0 >= IDLE_MS / 1000
        assert c.request(3, 12, **md).brokers     # still open right after
    # a stock client whose connections the broker closed while it was quiet carries on (librdkafka
    # too, but its reconnect backoff grows with every close, which makes it slow to test this way)
    p = KafkaProducer(bootstrap_servers=idle_broker.bootstrap_servers)
    try:
        offsets = []
        for i in range(2):
            offsets.append(p.send("idle-lp", f"v{i}".encode()).get(10).offset)
            time.sleep(IDLE_MS * 1.5 / 1000)
        assert offsets == [0, 1]
    finally:
        p.close()


def test_admin_denials_answer_as_kafka(gap_broker) -> None:
    """The review of the admin APIs against KafkaApis/ControllerApis: CreateTopics (the denied
    message, configs only with DESCRIBE_CONFIGS), DeleteTopics (DELETE on the cluster; names only
    when describable), the messages of DescribeConfigs/IncrementalAlterConfigs/DescribeProducers,
    DescribeTransactions' defaults, cluster authorized operations 0 without DESCRIBE on it."""
    from confluent_kafka.admin import AclBinding, ResourcePatternType
    T = 29
    mine, theirs, spare = unique_name("ct-carol-"), unique_name("ct-no-"), unique_name("ct-cfg-")
    create_acls(gap_broker, allow(ResourceType.TOPIC, mine, AclOperation.CREATE, principal="User:carol"),
                allow(ResourceType.TOPIC, spare, AclOperation.CREATE, principal="User:carol"),
                allow(ResourceType.TOPIC, spare, AclOperation.DESCRIBE_CONFIGS, principal="User:carol"),
                allow(ResourceType.BROKER, "kafka-cluster", AclOperation.CREATE, principal="User:dave"),
                allow(ResourceType.BROKER, "kafka-cluster", AclOperation.DELETE, principal="User:dave"))
    new = [dict(name=n, num_partitions=1, replication_factor=1, assignments=[], configs=[]) for n in (mine, theirs, spare)]
    with _login(gap_broker, "carol") as c:
        r = {t.name: t for t in c.request(19, 7, topics=new, timeout_ms=5000, validate_only=False).topics}
        assert (r[mine].error_code, r[mine].topic_config_error_code, r[mine].num_partitions, r[mine].configs) == (0, T, -1, [])
        assert (r[theirs].error_code, r[theirs].error_message) == (T, "Authorization failed.")
        assert (r[spare].error_code, r[spare].topic_config_error_code, r[spare].num_partitions) == (0, 0, 1)
        assert {cfg.name for cfg in r[spare].configs} >= {"cleanup.policy", "retention.ms"}
        r = c.request(3, 10, topics=[], allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                      include_topic_authorized_operations=False)
        assert r.authorized_operations == set()               # the bit field 0: no DESCRIBE on the cluster
        assert c.request(60, 0, include_cluster_authorized_operations=True).authorized_operations == set()
        # DeleteTopics: by id, an undescribable topic is not named; by name, an undescribable one is
        # denied whether or not it exists, a describable missing one is unknown
        with _login(gap_broker, "admin") as a:
            ids = {t.name: t.topic_id for t in a.request(3, 12, topics=[dict(name=mine, topic_id=None)],
                                                         allow_auto_topic_creation=False,
                                                         include_topic_authorized_operations=False).topics}
        by_id = [dict(name=None, topic_id=ids[mine])]
        r = c.request(20, 6, timeout_ms=5000, topics=by_id + [dict(name="ct-maybe-missing", topic_id=None),
                                                              dict(name="ct-nobody-missing", topic_id=None)])
        got = {t.name: (t.error_code, t.error_message if t.error_code == T else None) for t in r.responses}
        assert got == {None: (T, "Topic authorization failed."), "ct-maybe-missing": (T, "Topic authorization failed."),
                       "ct-nobody-missing": (T, "Topic authorization failed.")}
        create_acls(gap_broker, allow(ResourceType.TOPIC, mine, AclOperation.DESCRIBE, principal="User:carol"),
                    AclBinding(ResourceType.TOPIC, "ct-maybe-", ResourcePatternType.PREFIXED, "User:carol", "*",
                               AclOperation.DESCRIBE, AclPermissionType.ALLOW))
        r = c.request(20, 6, timeout_ms=5000, topics=by_id + [dict(name="ct-maybe-missing", topic_id=None)])
        assert sorted((t.name, t.error_code) for t in r.responses) == sorted([("ct-maybe-missing", 3), (mine, T)])
        assert c.request(20, 5, timeout_ms=5000, topic_names=[mine]).responses[0].error_code == T   # v5: by name
        r = c.request(3, 12, topics=[dict(name="ct-maybe-zzz", topic_id=None)], allow_auto_topic_creation=False,
                      include_topic_authorized_operations=True)   # Kafka fills in ops for errors too
        assert (r.topics[0].error_code, r.topics[0].authorized_operations) == (3, {8})
        r = c.request(32, 4, resources=[dict(resource_type=2, resource_name=theirs, configuration_keys=None),
                                        dict(resource_type=4, resource_name="1", configuration_keys=None)],
                      include_synonyms=False, include_documentation=False)
        assert sorted((x.error_code, x.error_message) for x in r.results) == [
            (T, "Topic authorization failed."), (31, "Cluster authorization failed.")]
        r = c.request(44, 1, resources=[dict(resource_type=2, resource_name=spare, configs=[
            dict(name="retention.ms", config_operation=0, value="1000")])], validate_only=False)
        assert (r.responses[0].error_code, r.responses[0].error_message) == (T, "Topic authorization failed.")
        r = c.request(61, 0, topics=[dict(name=spare, partition_indexes=[0])])
        assert (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].error_message) == (
            T, "Topic authorization failed.")
        s = c.request(65, 0, transactional_ids=["tx-nope"]).transaction_states[0]
        assert (s.error_code, s.producer_id, s.producer_epoch, s.transaction_start_time_ms) == (53, 0, 0, 0)
    with _login(gap_broker, "dave") as c:   # CREATE/DELETE on the cluster: any topic
        r = c.request(20, 6, timeout_ms=5000, topics=[dict(name=spare, topic_id=None)])
        assert [(t.name, t.error_code) for t in r.responses] == [(spare, 0)]
        r = c.request(3, 10, topics=[], allow_auto_topic_creation=False, include_cluster_authorized_operations=True,
                      include_topic_authorized_operations=False)
        assert r.authorized_operations == {5, 8}   # CREATE, and DESCRIBE implied by DELETE (Kafka's implication rules)


def test_transactional_write_is_checked_on_transactional_records(gap_broker) -> None:
    """KafkaApis.handleProduceRequest checks WRITE on the transactional id only when the records are
    transactional (first batch of a partition), and denies transactional records that name no
    transactional id; plain records under a named but unauthorized id are written."""
    topic = unique_name("txr-")
    assert produce_errors(plain_conf(gap_broker, "admin"), topic, 1) == [None]
    create_acls(gap_broker, allow(ResourceType.TOPIC, topic, AclOperation.WRITE, principal="User:bob"))

    def produce(c, txn_id, records) -> list[int]:
        r = c.request(0, 9, transactional_id=txn_id, acks=1, timeout_ms=5000,
                      topic_data=[dict(name=topic, partition_data=[dict(index=0, records=bytes(records))])])
        return [p.error_code for t in r.responses for p in t.partition_responses]
    txn = batch(1, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    with _login(gap_broker, "bob") as c:
        assert produce(c, None, txn) == [53]           # transactional records without a transactional id
        assert produce(c, "tx-bob", txn) == [53]       # no WRITE on the transactional id
        assert produce(c, "tx-bob", batch(2)) == [0]   # plain records: the id is not checked
    with _login(gap_broker, "admin") as c:
        assert list_offset(c, topic, -1).offset == 1 + 2


def test_cluster_denials_have_kafkas_shape(gap_broker) -> None:
    """getErrorResponse / KafkaApis shapes: DescribeLogDirs answers no results, DescribeClientQuotas
    null entries, ListPartitionReassignments echoes the asked partitions, FindCoordinator v0-3
    carries the error's message."""
    with _login(gap_broker, "bob") as c:
        r = c.request(35, 4, topics=[dict(topic="x", partitions=[0, 1])])
        assert (r.error_code, r.results) == (31, [])
        r = c.request(48, 1, components=[], strict=False)
        assert (r.error_code, r.error_message, r.entries) == (31, "Cluster authorization failed.", None)
        r = c.request(46, 0, timeout_ms=1000, topics=[dict(name="x", partition_indexes=[0, 2])])
        assert r.error_code == 31 and [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [
            ("x", [0, 2])]
        r = c.request(10, 3, key="g-nope", key_type=0)
        assert (r.error_code, r.error_message, r.node_id) == (30, "Group authorization failed.", -1)
        r = c.request(10, 3, key="tx-nope", key_type=1)
        assert (r.error_code, r.error_message) == (53, "Transactional Id authorization failed.")
        r = c.request(30, 3, creations=[dict(resource_type=2, resource_name="x", resource_pattern_type=3,
                                             principal="User:bob", host="*", operation=2, permission_type=3)])
        assert (r.results[0].error_code, r.results[0].error_message) == (31, "Cluster authorization failed.")
        r = c.request(51, 0, deletions=[], upsertions=[dict(name="bob", mechanism=2, iterations=4096, salt=b"s",
                                                             salted_password=b"p")])
        assert (r.results[0].error_code, r.results[0].error_message) == (31, "Cluster authorization failed.")


def test_describe_topic_partitions_hides_what_it_must(gap_broker) -> None:
    """A named undescribable topic: TOPIC_AUTHORIZATION_FAILED with the zero topic id; a listing
    leaves hidden topics out and its next cursor never names one; visible topics carry their
    authorized operations."""
    import uuid as _uuid
    prefix = unique_name("dtp-")
    a, hidden, c_ = prefix + "-a", prefix + "-b", prefix + "-c"
    with _login(gap_broker, "admin") as adm:
        r = adm.request(19, 7, topics=[dict(name=n, num_partitions=2, replication_factor=1, assignments=[], configs=[])
                                       for n in (a, hidden, c_)], timeout_ms=5000, validate_only=False)
        assert [t.error_code for t in r.topics] == [0, 0, 0]
    create_acls(gap_broker, *(allow(ResourceType.TOPIC, n, AclOperation.READ, principal="User:dave") for n in (a, c_)))
    with _login(gap_broker, "dave") as c:
        r = c.request(75, 0, topics=[dict(name=a), dict(name=hidden)], response_partition_limit=100, cursor=None)
        by = {t.name: t for t in r.topics}
        assert (by[hidden].error_code, by[hidden].partitions) == (29, [])
        assert by[hidden].topic_id in (None, _uuid.UUID(int=0))   # the zero id (decoded as None)
        assert by[a].error_code == 0 and by[a].topic_authorized_operations == (1 << 3) | (1 << 8)   # READ, DESCRIBE
        seen, cursor = [], dict(topic_name=a, partition_index=0)
        while cursor is not None:      # page through every topic, two partitions a page
            r = c.request(75, 0, topics=[], response_partition_limit=2, cursor=cursor)
            seen += [(t.name, p.partition_index) for t in r.topics for p in t.partitions]
            cursor = r.next_cursor and dict(topic_name=r.next_cursor.topic_name,
                                             partition_index=r.next_cursor.partition_index)
            assert cursor is None or cursor["topic_name"] != hidden
        assert [x for x in seen if x[0].startswith(prefix)] == [(a, 0), (a, 1), (c_, 0), (c_, 1)]


def test_authorized_operations_without_an_authorizer_are_all_supported(samsa_broker) -> None:
    """Kafka's AuthHelper.authorizedOperations with no authorizer: every supported operation."""
    from kafka.protocol.metadata import MetadataRequest
    from protocol.messages import REQUESTS, RESPONSES
    from tests.support.rawclient import RawClient
    with RawClient(samsa_broker.bootstrap_servers) as c:
        r = c.request(3, 10, topics=[MetadataRequest.MetadataRequestTopic(name="ops-t")], allow_auto_topic_creation=True,
                      include_cluster_authorized_operations=True, include_topic_authorized_operations=True)
        assert r.topics[0].authorized_operations == {3, 4, 5, 6, 7, 8, 10, 11}   # READ .. ALTER_CONFIGS
        assert r.authorized_operations == {5, 7, 8, 9, 10, 11, 12}                # the cluster's
        r = c.request(3, 12, topics=[MetadataRequest.MetadataRequestTopic(name="ops-t")], allow_auto_topic_creation=False,
                      include_topic_authorized_operations=False)
        assert r.topics[0].authorized_operations in (None, -2147483648)         # not asked: not filled in
        r = c.request(15, 5, groups=["ops-g"], include_authorized_operations=True)
        assert r.groups[0].authorized_operations == {3, 6, 8}                    # READ, DELETE, DESCRIBE
        hb = build_message(REQUESTS[68], dict(group_id="ops-cg", member_id="m1", member_epoch=0, instance_id=None,
                                       rack_id=None, rebalance_timeout_ms=30000, subscribed_topic_names=["ops-t"],
                                       server_assignor=None, topic_partitions=[]))
        assert c.call(hb, RESPONSES[68], 0).error_code == 0
        r = c.request(69, 0, group_ids=["ops-cg"], include_authorized_operations=True)
        assert (r.groups[0].error_code, r.groups[0].authorized_operations) == (0, (1 << 3) | (1 << 6) | (1 << 8))
        r = c.request(75, 0, topics=[REQUESTS[75].TopicRequest(name="ops-t")], response_partition_limit=10, cursor=None)
        assert r.topics[0].topic_authorized_operations == sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def test_consumer_group_describe_fills_in_the_principals_operations(gap_broker) -> None:
    """ConsumerGroupDescribe with include_authorized_operations: the allowed group's operations for
    this principal (KafkaApis.handleConsumerGroupDescribe); a denied group the schema defaults."""
    group, other = unique_name("cgd-"), unique_name("cgd-no-")
    with _login(gap_broker, "admin") as a:
        for g in (group, other):
            r = a.request(68, 0, group_id=g, member_id="m-" + g, member_epoch=0, instance_id=None, rack_id=None,
                          rebalance_timeout_ms=30000, subscribed_topic_names=["cgd-topic"], server_assignor=None,
                          topic_partitions=[])
            assert r.error_code == 0, r
    create_acls(gap_broker, allow(ResourceType.GROUP, group, AclOperation.READ, principal="User:carol"))
    with _login(gap_broker, "carol") as c:
        r = c.request(69, 0, group_ids=[group, other], include_authorized_operations=True)
        by = {g.group_id: g for g in r.groups}
        assert (by[group].error_code, by[group].authorized_operations) == (0, (1 << 3) | (1 << 8))   # READ, DESCRIBE
        assert (by[other].error_code, by[other].group_epoch, by[other].authorized_operations) == (30, 0, -2147483648)
