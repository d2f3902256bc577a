// Drives the real Java Kafka client (kafka-clients 3.9 and 4.3) for Samsa's tests.
//
// Usage: java -cp <classes>:<jars> SamsaJavaClient <subcommand> --bootstrap HOST:PORT [options]
// Every result is one JSON object per line on stdout, each with a "type" field; client logs go to
// stderr (SAMSA_JAVA_LOG=trace|debug|info|warn|error|off, default warn). Exit codes: 0 success,
// 3 a Kafka operation failed and was reported as a {"type":"error"} line, 2 bad usage, 1 crash.
// Compiled from source at test time against each kafka-clients line, so it only uses APIs that
// exist in both 3.9 and 4.3. Records are deterministic: key "<key-prefix>-i", value "v-i".

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class SamsaJavaClient {
    static final PrintStream OUT = new PrintStream(
            new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false, StandardCharsets.UTF_8);
    static final Set<String> FLAGS = Set.of("--commit", "--with-headers", "--print-records", "--quiet", "--abort",
            "--validate-only", "--null-keys", "--internal", "--synonyms");
    static boolean reportedError = false;

    // ---------------------------------------------------------------- argument parsing
    static final class Args {
        final Map<String, List<String>> opts = new HashMap<>();

        Args(String[] argv, int from) {
            for (int i = from; i < argv.length; i++) {
                String a = argv[i];
                if (!a.startsWith("--")) throw new IllegalArgumentException("unexpected argument: " + a);
                String v;
                int eq = a.indexOf('=');
                if (eq > 0 && !FLAGS.contains(a.substring(0, eq))) { v = a.substring(eq + 1); a = a.substring(0, eq); }
                else if (FLAGS.contains(a)) v = "true";
                else if (i + 1 < argv.length) v = argv[++i];
                else throw new IllegalArgumentException("missing value for " + a);
                opts.computeIfAbsent(a, k -> new ArrayList<>()).add(v);
            }
        }

        String get(String k, String dflt) { List<String> l = opts.get(k); return l == null ? dflt : l.get(l.size() - 1); }
        String req(String k) { String v = get(k, null); if (v == null) throw new IllegalArgumentException(k + " is required"); return v; }
        List<String> all(String k) { return opts.getOrDefault(k, List.of()); }
        boolean flag(String k) { return Boolean.parseBoolean(get(k, "false")); }
        long num(String k, long dflt) { String v = get(k, null); return v == null ? dflt : Long.parseLong(v); }
        boolean has(String k) { return opts.containsKey(k); }
    }

    // ---------------------------------------------------------------- JSON output
    static void json(StringBuilder sb, Object o) {
        if (o == null) sb.append("null");
        else if (o instanceof String) {
            String s = (String) o;
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': sb.append("\\\""); break;
                    case '\\': sb.append("\\\\"); break;
                    case '\n': sb.append("\\n"); break;
                    case '\r': sb.append("\\r"); break;
                    case '\t': sb.append("\\t"); break;
                    default:
                        if (c < 0x20) sb.append(String.format("\\u%04x", (int) c)); else sb.append(c);
                }
            }
            sb.append('"');
        } else if (o instanceof Number || o instanceof Boolean) sb.append(o);
        else if (o instanceof Map) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (!first) sb.append(',');
                first = false;
                json(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Collection) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Collection<?>) o) { if (!first) sb.append(','); first = false; json(sb, x); }
            sb.append(']');
        } else if (o instanceof Optional) json(sb, ((Optional<?>) o).orElse(null));
        else json(sb, o.toString());
    }

    static Map<String, Object> obj(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static void emit(Map<String, Object> m) {
        StringBuilder sb = new StringBuilder(256);
        json(sb, m);
        OUT.println(sb);
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof KafkaException && t.getClass() == KafkaException.class)
                && t.getCause() != null) t = t.getCause();
        return t;
    }

    /** Reports a failed Kafka operation as data (tests assert on the exception class Kafka maps the code to). */
    static void error(Throwable t, Object... extra) {
        t = unwrap(t);
        Map<String, Object> m = obj("type", "error", "error", t.getClass().getSimpleName(), "message", t.getMessage());
        for (int i = 0; i < extra.length; i += 2) m.put((String) extra[i], extra[i + 1]);
        emit(m);
        reportedError = true;
    }

    static String str(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }
    static byte[] bytes(String s) { return s == null ? null : s.getBytes(StandardCharsets.UTF_8); }

    // ---------------------------------------------------------------- client configuration
    /** Fast-failing timeouts for tests; --prop k=v overrides anything. */
    static Properties common(Args a, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.req("--bootstrap"));
        p.put("client.id", a.get("--client-id", clientId));
        p.put("request.timeout.ms", "10000");
        p.put("retry.backoff.ms", "100");
        p.put("reconnect.backoff.ms", "50");
        p.put("reconnect.backoff.max.ms", "1000");
        p.put("socket.connection.setup.timeout.ms", "5000");
        p.put("socket.connection.setup.timeout.max.ms", "10000");
        p.put("metadata.max.age.ms", "5000");
        return p;
    }

    static void overrides(Properties p, Args a) {
        for (String kv : a.all("--prop")) {
            int eq = kv.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("--prop wants key=value, got " + kv);
            p.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
    }

    static Admin admin(Args a) {
        Properties p = common(a, "samsa-java-admin");
        p.put("default.api.timeout.ms", "20000");
        overrides(p, a);
        return Admin.create(p);
    }

    static Properties consumerProps(Args a, String clientId) {
        Properties p = common(a, clientId);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("default.api.timeout.ms", "20000");
        p.put("fetch.max.wait.ms", "500");
        p.put("isolation.level", a.get("--isolation", "read_uncommitted"));
        return p;
    }

    static List<Integer> partitionsOf(Admin admin, String topic) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        List<Integer> ps = new ArrayList<>();
        for (TopicPartitionInfo i : d.partitions()) ps.add(i.partition());
        Collections.sort(ps);
        return ps;
    }

    static List<Integer> parseInts(String csv) {
        List<Integer> l = new ArrayList<>();
        for (String s : csv.split(",")) if (!s.isBlank()) l.add(Integer.parseInt(s.trim()));
        return l;
    }

    // ---------------------------------------------------------------- produce
    static void produce(Args a) throws Exception {
        String topic = a.req("--topic");
        long count = a.num("--count", 1), start = a.num("--start", 0);
        Integer parts = a.has("--partitions") ? Integer.valueOf(a.req("--partitions")) : null;
        String keyPrefix = a.get("--key-prefix", "k");
        boolean nullKeys = a.flag("--null-keys"), headers = a.flag("--with-headers");
        Long tsBase = a.has("--timestamp") ? Long.valueOf(a.req("--timestamp")) : null;
        long tsStep = a.num("--timestamp-step", 1);
        int valueSize = (int) a.num("--value-size", 0);
        String txId = a.get("--transactional-id", null);

        Properties p = common(a, "samsa-java-producer");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("delivery.timeout.ms", "30000");
        p.put("max.block.ms", "20000");
        if (a.has("--acks")) p.put("acks", a.req("--acks"));
        if (a.has("--compression")) p.put("compression.type", a.req("--compression"));
        if (a.has("--idempotent")) p.put("enable.idempotence", a.req("--idempotent"));
        if (a.has("--linger-ms")) p.put("linger.ms", a.req("--linger-ms"));
        if (a.has("--batch-size")) p.put("batch.size", a.req("--batch-size"));
        if (txId != null) p.put("transactional.id", txId);
        overrides(p, a);

        int n = (int) count;
        int[] ackPart = new int[n];
        long[] ackOff = new long[n], ackTs = new long[n];
        boolean[] ok = new boolean[n];
        Map<String, Integer> errorTypes = new TreeMap<>();
        List<String> errorSamples = new ArrayList<>();
        long t0 = System.nanoTime();
        boolean txFailed = false;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            if (txId != null) { producer.initTransactions(); producer.beginTransaction(); }
            for (int j = 0; j < n; j++) {
                final int idx = j;
                long i = start + j;
                byte[] key = nullKeys ? null : bytes(keyPrefix + "-" + i);
                String v = "v-" + i;
                if (valueSize > v.length()) v = v + "x".repeat(valueSize - v.length());
                Integer part = parts == null ? null : (int) (i % parts);
                Long ts = tsBase == null ? null : tsBase + i * tsStep;
                ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, part, ts, key, bytes(v));
                if (headers) {
                    rec.headers().add("idx", bytes(Long.toString(i)));
                    rec.headers().add("src", bytes("java"));
                }
                producer.send(rec, (md, ex) -> {
                    synchronized (ok) {
                        if (ex == null) {
                            ok[idx] = true; ackPart[idx] = md.partition(); ackOff[idx] = md.offset(); ackTs[idx] = md.timestamp();
                        } else {
                            Throwable u = unwrap(ex);
                            errorTypes.merge(u.getClass().getSimpleName(), 1, Integer::sum);
                            if (errorSamples.size() < 5) errorSamples.add(u.getClass().getSimpleName() + ": " + u.getMessage());
                        }
                    }
                });
            }
            producer.flush();
            if (txId != null) {
                if (a.flag("--abort")) producer.abortTransaction();
                else {
                    try { producer.commitTransaction(); }
                    catch (KafkaException e) { txFailed = true; error(e, "stage", "commitTransaction"); }
                }
            }
        }
        long elapsedMs = (System.nanoTime() - t0) / 1_000_000;
        Map<String, Map<String, Object>> perPart = new TreeMap<>(Comparator.comparingInt(Integer::parseInt));
        int acked = 0;
        synchronized (ok) {
            for (int j = 0; j < n; j++) {
                if (!ok[j]) continue;
                acked++;
                Map<String, Object> s = perPart.computeIfAbsent(Integer.toString(ackPart[j]),
                        k -> obj("count", 0, "min_offset", null, "max_offset", null));
                s.put("count", (Integer) s.get("count") + 1);
                if (ackOff[j] >= 0) {
                    Long mn = (Long) s.get("min_offset"), mx = (Long) s.get("max_offset");
                    s.put("min_offset", mn == null ? ackOff[j] : Math.min(mn, ackOff[j]));
                    s.put("max_offset", mx == null ? ackOff[j] : Math.max(mx, ackOff[j]));
                }
            }
            if (a.flag("--print-records"))
                for (int j = 0; j < n; j++)
                    emit(obj("type", "ack", "i", start + j, "ok", ok[j], "partition", ok[j] ? ackPart[j] : null,
                            "offset", ok[j] ? ackOff[j] : null, "timestamp", ok[j] ? ackTs[j] : null));
            emit(obj("type", "produce", "topic", topic, "count", n, "acked", acked, "errors", n - acked,
                    "error_types", errorTypes, "error_samples", errorSamples, "partitions", perPart,
                    "transactional_id", txId, "aborted", txId != null && a.flag("--abort"), "elapsed_ms", elapsedMs));
        }
        if (acked < n && !txFailed) {
            emit(obj("type", "error", "error", errorTypes.isEmpty() ? "Unacknowledged" : errorTypes.keySet().iterator().next(),
                    "message", (n - acked) + " of " + n + " records not acknowledged: " + errorSamples, "topic", topic));
            reportedError = true;
        }
    }

    /** Consume-transform-produce, exactly once: read --input (read_committed) as member of --group,
     *  write each value upper-cased to --output and commit the consumed offsets with
     *  sendOffsetsToTransaction, one transaction per poll, until --max records or the deadline. */
    static void transform(Args a) throws Exception {
        String in = a.req("--input"), out = a.req("--output"), txId = a.req("--transactional-id");
        long max = a.num("--max", Long.MAX_VALUE);
        long deadline = System.currentTimeMillis() + a.num("--timeout-ms", 60000);
        Properties cp = consumerProps(a, "samsa-java-transform");
        cp.put("group.id", a.req("--group"));
        cp.put("auto.offset.reset", "earliest");
        cp.put("isolation.level", "read_committed");
        Properties pp = common(a, "samsa-java-transform-producer");
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        pp.put("transactional.id", txId);
        pp.put("max.block.ms", "20000");
        pp.put("delivery.timeout.ms", "30000");
        for (String kv : a.all("--prop")) {
            int eq = kv.indexOf('=');
            String k = kv.substring(0, eq), v = kv.substring(eq + 1);
            if (k.startsWith("consumer.")) cp.put(k.substring(9), v);
            else if (k.startsWith("producer.")) pp.put(k.substring(9), v);
        }
        long n = 0, txns = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp); KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(pp)) {
            pr.initTransactions();
            c.subscribe(List.of(in));
            while (n < max && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) continue;
                pr.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    pr.send(new ProducerRecord<>(out, r.partition(), r.key(), bytes(str(r.value()).toUpperCase(Locale.ROOT))));
                    offs.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    n++;
                }
                pr.sendOffsetsToTransaction(offs, c.groupMetadata());
                pr.commitTransaction();
                txns++;
            }
        } catch (KafkaException e) {
            error(e, "stage", "transform");
            return;
        }
        emit(obj("type", "transform", "count", n, "transactions", txns));
    }

    /** Two producers with one transactional id: the younger one's initTransactions fences the
     *  older, whose open transaction is aborted and whose next send or commit must fail. */
    static void fence(Args a) throws Exception {
        String topic = a.req("--topic");
        String txId = a.req("--transactional-id");
        Properties p = common(a, "samsa-java-fence");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("transactional.id", txId);
        p.put("max.block.ms", "20000");
        p.put("delivery.timeout.ms", "30000");
        overrides(p, a);
        String stage = "none", failure = null;
        try (KafkaProducer<byte[], byte[]> older = new KafkaProducer<>(p)) {
            older.initTransactions();
            older.beginTransaction();
            older.send(new ProducerRecord<>(topic, 0, null, bytes("older-1"))).get();
            try (KafkaProducer<byte[], byte[]> younger = new KafkaProducer<>(p)) {
                younger.initTransactions();
                younger.beginTransaction();
                younger.send(new ProducerRecord<>(topic, 0, null, bytes("younger-1"))).get();
                younger.commitTransaction();
            }
            try {
                stage = "send";
                older.send(new ProducerRecord<>(topic, 0, null, bytes("older-2"))).get();
                stage = "commit";
                older.commitTransaction();
                stage = "committed";
            } catch (ExecutionException | KafkaException e) {
                failure = unwrap(e).getClass().getSimpleName();
            }
        }
        emit(obj("type", "fence", "older_stage", stage, "older_failure", failure));
    }

    // ---------------------------------------------------------------- consumers
    static Map<String, Object> recordJson(ConsumerRecord<byte[], byte[]> r) {
        List<Object> hs = new ArrayList<>();
        for (Header h : r.headers()) hs.add(Arrays.asList(h.key(), str(h.value())));
        return obj("type", "record", "topic", r.topic(), "partition", r.partition(), "offset", r.offset(),
                "key", str(r.key()), "value", str(r.value()), "timestamp", r.timestamp(),
                "timestamp_type", r.timestampType().name, "headers", hs, "leader_epoch", r.leaderEpoch());
    }

    /** Polls until max records, the stop offsets (if any) or the deadline; prints records unless --quiet. */
    static long pollLoop(Consumer<byte[], byte[]> c, Args a, Map<TopicPartition, Long> stopAt,
                         Map<TopicPartition, Long> lastOffsets) {
        long max = a.num("--max", Long.MAX_VALUE);
        long deadline = System.currentTimeMillis() + a.num("--timeout-ms", 30000);
        boolean quiet = a.flag("--quiet");
        long n = 0;
        Set<String> distinct = new HashSet<>();
        while (n < max && System.currentTimeMillis() < deadline) {
            if (stopAt != null && reached(c, stopAt)) break;
            long left = Math.max(1, Math.min(500, deadline - System.currentTimeMillis()));
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(left))) {
                if (n >= max) break;
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                if (stopAt != null && stopAt.containsKey(tp) && r.offset() >= stopAt.get(tp)) continue;
                n++;
                lastOffsets.put(tp, r.offset());
                if (!quiet) emit(recordJson(r));
                else distinct.add(r.partition() + "/" + str(r.key()) + "/" + str(r.value()));
            }
        }
        if (quiet) distinctValues = distinct.size();
        return n;
    }

    static Integer distinctValues = null;

    static boolean reached(Consumer<byte[], byte[]> c, Map<TopicPartition, Long> stopAt) {
        for (Map.Entry<TopicPartition, Long> e : stopAt.entrySet())
            if (c.position(e.getKey()) < e.getValue()) return false;
        return true;
    }

    static Map<String, Object> byPartition(Map<TopicPartition, Long> m) {
        Map<String, Object> out = new TreeMap<>(Comparator.comparingInt(Integer::parseInt));
        for (Map.Entry<TopicPartition, Long> e : m.entrySet()) out.put(Integer.toString(e.getKey().partition()), e.getValue());
        return out;
    }

    /** What Spark's Kafka source does: assign + seek + poll, never group membership, no auto reset. */
    static void consumeAssign(Args a) throws Exception {
        String topic = a.req("--topic");
        Properties p = consumerProps(a, "samsa-java-assign");
        p.put("group.id", a.get("--group", "spark-kafka-source-" + UUID.randomUUID() + "-driver-0"));
        p.put("auto.offset.reset", "none");
        overrides(p, a);
        long t0 = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            List<Integer> parts;
            if (a.has("--partitions")) parts = parseInts(a.req("--partitions"));
            else {
                parts = new ArrayList<>();
                for (PartitionInfo i : c.partitionsFor(topic)) parts.add(i.partition());
                Collections.sort(parts);
            }
            List<TopicPartition> tps = new ArrayList<>();
            for (int i : parts) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            String from = a.get("--from", "earliest");
            if (from.equals("earliest")) c.seekToBeginning(tps);
            else if (from.equals("latest")) c.seekToEnd(tps);
            else if (from.startsWith("offset:")) for (TopicPartition tp : tps) c.seek(tp, Long.parseLong(from.substring(7)));
            else if (from.startsWith("offsets:")) {
                for (String kv : from.substring(8).split(",")) {
                    String[] x = kv.split("=");
                    c.seek(new TopicPartition(topic, Integer.parseInt(x[0])), Long.parseLong(x[1]));
                }
            } else if (from.startsWith("timestamp:")) {
                long ts = Long.parseLong(from.substring(10));
                Map<TopicPartition, Long> q = new HashMap<>();
                for (TopicPartition tp : tps) q.put(tp, ts);
                Map<TopicPartition, OffsetAndTimestamp> found = c.offsetsForTimes(q);
                Map<TopicPartition, Long> ends = c.endOffsets(tps);
                for (TopicPartition tp : tps) {
                    OffsetAndTimestamp o = found.get(tp);
                    c.seek(tp, o == null ? ends.get(tp) : o.offset());
                }
            } else throw new IllegalArgumentException("bad --from " + from);

            Map<TopicPartition, Long> stopAt = null;
            String to = a.get("--to", null);
            if ("latest".equals(to)) stopAt = new HashMap<>(c.endOffsets(tps));
            else if (to != null && to.startsWith("offset:")) {
                stopAt = new HashMap<>();
                for (TopicPartition tp : tps) stopAt.put(tp, Long.parseLong(to.substring(7)));
            } else if (to != null) throw new IllegalArgumentException("bad --to " + to);

            Map<TopicPartition, Long> last = new HashMap<>();
            long n;
            try {
                n = pollLoop(c, a, stopAt, last);
            } catch (KafkaException e) {
                error(e, "topic", topic);
                return;
            }
            Map<TopicPartition, Long> pos = new HashMap<>();
            for (TopicPartition tp : tps) pos.put(tp, c.position(tp));
            emit(obj("type", "summary", "count", n, "distinct", distinctValues, "positions", byPartition(pos),
                    "stop_offsets", stopAt == null ? null : byPartition(stopAt), "last_offsets", byPartition(last),
                    "group_id", p.getProperty("group.id"), "elapsed_ms", (System.nanoTime() - t0) / 1_000_000));
        }
    }

    static final Map<String, String> ASSIGNORS = Map.of(
            "range", "org.apache.kafka.clients.consumer.RangeAssignor",
            "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
            "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
            "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    static List<Object> tpList(Collection<TopicPartition> tps) {
        List<TopicPartition> l = new ArrayList<>(tps);
        l.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        List<Object> out = new ArrayList<>();
        for (TopicPartition tp : l) out.add(obj("topic", tp.topic(), "partition", tp.partition()));
        return out;
    }

    /** A subscribing group member (classic protocol unless --prop group.protocol=consumer). */
    static void consumeGroup(Args a) throws Exception {
        List<String> topics = a.all("--topic");
        String regex = a.get("--topic-regex", null);
        if (topics.isEmpty() && regex == null) throw new IllegalArgumentException("--topic or --topic-regex is required");
        Properties p = consumerProps(a, "samsa-java-group");
        p.put("group.id", a.req("--group"));
        p.put("auto.offset.reset", a.get("--reset", "earliest"));
        p.put("session.timeout.ms", a.get("--session-timeout-ms", "10000"));
        p.put("heartbeat.interval.ms", "1000");
        if (a.has("--assignor")) {
            String cls = ASSIGNORS.get(a.req("--assignor"));
            if (cls == null) throw new IllegalArgumentException("unknown assignor " + a.req("--assignor"));
            p.put("partition.assignment.strategy", cls);
        }
        if (a.has("--group-instance-id")) p.put("group.instance.id", a.req("--group-instance-id"));
        overrides(p, a);
        if ("consumer".equalsIgnoreCase(String.valueOf(p.getOrDefault("group.protocol", "classic")))) {
            // KIP-848: the broker owns these (group.consumer.*); the 4.x client refuses them.
            p.remove("session.timeout.ms");
            p.remove("heartbeat.interval.ms");
            p.remove("partition.assignment.strategy");
        }
        long t0 = System.nanoTime();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> ps) { emit(obj("type", "revoked", "partitions", tpList(ps))); }
                public void onPartitionsAssigned(Collection<TopicPartition> ps) { emit(obj("type", "assigned", "partitions", tpList(ps))); }
            };
            if (regex != null) {
                // subscribe(SubscriptionPattern) (4.x only: a broker-side RE2/J regex), by reflection
                // so that this file still compiles against 3.9.
                Class<?> sp = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
                Object pattern = sp.getConstructor(String.class).newInstance(regex);
                c.getClass().getMethod("subscribe", sp, ConsumerRebalanceListener.class).invoke(c, pattern, listener);
            } else {
                c.subscribe(topics, listener);
            }
            Map<TopicPartition, Long> last = new HashMap<>();
            long n;
            try {
                n = pollLoop(c, a, null, last);
                long hold = a.num("--hold-ms", 0), until = System.currentTimeMillis() + hold;
                while (System.currentTimeMillis() < until) c.poll(Duration.ofMillis(Math.min(200, until - System.currentTimeMillis() + 1)));
                if (a.flag("--commit")) {
                    Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
                    for (Map.Entry<TopicPartition, Long> e : last.entrySet())
                        offs.put(e.getKey(), new OffsetAndMetadata(e.getValue() + 1, a.get("--commit-metadata", "")));
                    c.commitSync(offs);
                    Map<TopicPartition, Long> shown = new HashMap<>();
                    for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offs.entrySet()) shown.put(e.getKey(), e.getValue().offset());
                    emit(obj("type", "committed", "offsets", byPartition(shown)));
                }
            } catch (KafkaException e) {
                error(e, "group", a.req("--group"));
                return;
            }
            ConsumerGroupMetadata gm = c.groupMetadata();
            emit(obj("type", "summary", "count", n, "distinct", distinctValues, "group_id", gm.groupId(),
                    "member_id", gm.memberId(), "generation_id", gm.generationId(), "group_instance_id", gm.groupInstanceId(),
                    "assignment", tpList(c.assignment()), "last_offsets", byPartition(last),
                    "elapsed_ms", (System.nanoTime() - t0) / 1_000_000));
        }
    }

    // ---------------------------------------------------------------- admin
    static OffsetSpec offsetSpec(String s) {
        if (s.equals("earliest")) return OffsetSpec.earliest();
        if (s.equals("latest")) return OffsetSpec.latest();
        if (s.equals("max-timestamp")) return OffsetSpec.maxTimestamp();
        if (s.startsWith("timestamp:")) return OffsetSpec.forTimestamp(Long.parseLong(s.substring(10)));
        throw new IllegalArgumentException("bad --spec " + s);
    }

    /** Admin.listOffsets as Spark's KafkaOffsetReaderAdmin calls it, one line per partition and spec. */
    static void adminListOffsets(Admin admin, Args a) throws Exception {
        String topic = a.req("--topic");
        List<Integer> parts = a.has("--partitions") ? parseInts(a.req("--partitions")) : partitionsOf(admin, topic);
        IsolationLevel iso = IsolationLevel.valueOf(a.get("--isolation", "read_uncommitted").toUpperCase(Locale.ROOT));
        List<String> specs = a.all("--spec").isEmpty() ? List.of("latest") : a.all("--spec");
        for (String spec : specs) {
            Map<TopicPartition, OffsetSpec> q = new LinkedHashMap<>();
            for (int i : parts) q.put(new TopicPartition(topic, i), offsetSpec(spec));
            try {
                Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> r =
                        admin.listOffsets(q, new ListOffsetsOptions(iso)).all().get();
                for (int i : parts) {
                    ListOffsetsResult.ListOffsetsResultInfo info = r.get(new TopicPartition(topic, i));
                    emit(obj("type", "offset", "spec", spec, "topic", topic, "partition", i, "offset", info.offset(),
                            "timestamp", info.timestamp(), "leader_epoch", info.leaderEpoch()));
                }
            } catch (ExecutionException e) {
                error(e, "spec", spec, "topic", topic);
            }
        }
    }

    static Map<String, Object> nodeJson(Node n) {
        return n == null ? null : obj("id", n.id(), "host", n.host(), "port", n.port(), "rack", n.rack());
    }

    static List<Object> ids(List<Node> nodes) {
        List<Object> l = new ArrayList<>();
        for (Node n : nodes) l.add(n.id());
        return l;
    }

    static void adminDescribeTopics(Admin admin, Args a) throws Exception {
        List<String> topics = a.all("--topic");
        DescribeTopicsResult r = admin.describeTopics(topics);
        for (String t : topics) {
            try {
                TopicDescription d = r.topicNameValues().get(t).get();
                List<Object> ps = new ArrayList<>();
                for (TopicPartitionInfo i : d.partitions())
                    ps.add(obj("partition", i.partition(), "leader", i.leader() == null ? null : i.leader().id(),
                            "replicas", ids(i.replicas()), "isr", ids(i.isr())));
                emit(obj("type", "topic", "name", d.name(), "topic_id", d.topicId().toString(), "internal", d.isInternal(),
                        "partitions", ps));
            } catch (ExecutionException e) {
                error(e, "topic", t);
            }
        }
    }

    static void adminListTopics(Admin admin, Args a) throws Exception {
        ListTopicsOptions o = new ListTopicsOptions().listInternal(a.flag("--internal"));
        for (TopicListing l : new TreeMap<String, TopicListing>(admin.listTopics(o).namesToListings().get()).values())
            emit(obj("type", "topic", "name", l.name(), "topic_id", l.topicId().toString(), "internal", l.isInternal()));
    }

    static void adminCreateTopic(Admin admin, Args a) throws Exception {
        String topic = a.req("--topic");
        Map<String, String> configs = new TreeMap<>();
        for (String kv : a.all("--config")) {
            int eq = kv.indexOf('=');
            configs.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        NewTopic nt = new NewTopic(topic, Optional.of((int) a.num("--partitions", 1)),
                Optional.of((short) a.num("--replication-factor", 1))).configs(configs);
        CreateTopicsResult r = admin.createTopics(List.of(nt), new CreateTopicsOptions().validateOnly(a.flag("--validate-only")));
        try {
            r.all().get();
            Integer np = null, rf = null;
            String id = null;
            Map<String, Object> cfg = new TreeMap<>();
            try {
                np = r.numPartitions(topic).get();
                rf = r.replicationFactor(topic).get();
                id = r.topicId(topic).get().toString();
                for (ConfigEntry e : r.config(topic).get().entries()) cfg.put(e.name(), e.value());
            } catch (ExecutionException e) { /* old-version responses carry no details */ }
            emit(obj("type", "created", "topic", topic, "topic_id", id, "num_partitions", np, "replication_factor", rf,
                    "validate_only", a.flag("--validate-only"), "configs", cfg));
        } catch (ExecutionException e) {
            error(e, "topic", topic);
        }
    }

    static void adminDeleteTopic(Admin admin, Args a) throws Exception {
        for (String t : a.all("--topic")) {
            try {
                admin.deleteTopics(List.of(t)).all().get();
                emit(obj("type", "deleted", "topic", t));
            } catch (ExecutionException e) {
                error(e, "topic", t);
            }
        }
    }

    static void adminCreatePartitions(Admin admin, Args a) throws Exception {
        String topic = a.req("--topic");
        int total = (int) a.num("--total", 0);
        try {
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all().get();
            emit(obj("type", "partitions_created", "topic", topic, "total", total));
        } catch (ExecutionException e) {
            error(e, "topic", topic);
        }
    }

    static void adminDeleteRecords(Admin admin, Args a) throws Exception {
        String topic = a.req("--topic");
        TopicPartition tp = new TopicPartition(topic, (int) a.num("--partition", 0));
        try {
            DeletedRecords d = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(a.num("--before", 0))))
                    .lowWatermarks().get(tp).get();
            emit(obj("type", "records_deleted", "topic", topic, "partition", tp.partition(), "low_watermark", d.lowWatermark()));
        } catch (ExecutionException e) {
            error(e, "topic", topic);
        }
    }

    static void adminDescribeConfigs(Admin admin, Args a) throws Exception {
        ConfigResource res = a.has("--broker")
                ? new ConfigResource(ConfigResource.Type.BROKER, a.get("--broker", ""))
                : new ConfigResource(ConfigResource.Type.TOPIC, a.req("--topic"));
        try {
            DescribeConfigsOptions opts = new DescribeConfigsOptions().includeSynonyms(a.flag("--synonyms"));
            Config c = admin.describeConfigs(List.of(res), opts).all().get().get(res);
            List<ConfigEntry> es = new ArrayList<>(c.entries());
            es.sort(Comparator.comparing(ConfigEntry::name));
            Set<String> only = new HashSet<>(a.all("--name"));
            for (ConfigEntry e : es) {
                if (!only.isEmpty() && !only.contains(e.name())) continue;
                List<Object> syns = new ArrayList<>();
                for (ConfigEntry.ConfigSynonym s : e.synonyms())
                    syns.add(List.of(s.name(), String.valueOf(s.value()), s.source().name()));
                emit(obj("type", "config", "resource", res.name(), "name", e.name(), "value", e.value(),
                        "source", e.source().name(), "is_default", e.isDefault(), "read_only", e.isReadOnly(),
                        "sensitive", e.isSensitive(), "config_type", e.type().name(), "synonyms", syns));
            }
        } catch (ExecutionException e) {
            error(e, "resource", res.name());
        }
    }

    /** What web consoles (kafbat UI, AKHQ, Redpanda Console) call: log dirs, client quotas, reassignments. */
    static void adminConsoleApis(Admin admin, Args a) throws Exception {
        int broker = Integer.parseInt(a.req("--broker"));
        try {
            Map<Integer, Map<String, LogDirDescription>> dirs = admin.describeLogDirs(List.of(broker)).allDescriptions().get();
            for (Map.Entry<String, LogDirDescription> d : dirs.get(broker).entrySet()) {
                Map<String, Object> sizes = new TreeMap<>();
                for (Map.Entry<TopicPartition, ReplicaInfo> r : d.getValue().replicaInfos().entrySet())
                    sizes.put(r.getKey().toString(), List.of(r.getValue().size(), r.getValue().offsetLag(), r.getValue().isFuture()));
                emit(obj("type", "log_dir", "path", d.getKey(), "error", d.getValue().error() == null ? null : d.getValue().error().toString(),
                        "total_bytes", d.getValue().totalBytes().orElse(-1L), "usable_bytes", d.getValue().usableBytes().orElse(-1L),
                        "replicas", sizes));
            }
        } catch (ExecutionException e) { error(e, "api", "DescribeLogDirs"); }
        try {
            Map<org.apache.kafka.common.quota.ClientQuotaEntity, Map<String, Double>> q =
                    admin.describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.all()).entities().get();
            emit(obj("type", "client_quotas", "count", q.size()));
        } catch (ExecutionException e) { error(e, "api", "DescribeClientQuotas"); }
        try {
            Map<TopicPartition, PartitionReassignment> r = admin.listPartitionReassignments().reassignments().get();
            emit(obj("type", "reassignments", "count", r.size()));
        } catch (ExecutionException e) { error(e, "api", "ListPartitionReassignments"); }
    }

    static void adminAlterConfigs(Admin admin, Args a) throws Exception {
        // --broker "" is the cluster-wide default (kafka-configs --entity-default)
        ConfigResource res = a.has("--broker")
                ? new ConfigResource(ConfigResource.Type.BROKER, a.get("--broker", ""))
                : new ConfigResource(ConfigResource.Type.TOPIC, a.req("--topic"));
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : a.all("--set")) {
            int eq = kv.indexOf('=');
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, eq), kv.substring(eq + 1)), AlterConfigOp.OpType.SET));
        }
        for (String k : a.all("--delete")) ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE));
        try {
            admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
            emit(obj("type", "configs_altered", "resource", res.name()));
        } catch (ExecutionException e) {
            error(e, "resource", res.name());
        }
    }

    static void adminDescribeCluster(Admin admin, Args a) throws Exception {
        DescribeClusterResult r = admin.describeCluster();
        List<Object> nodes = new ArrayList<>();
        List<Node> ns = new ArrayList<>(r.nodes().get());
        ns.sort(Comparator.comparingInt(Node::id));
        for (Node n : ns) nodes.add(nodeJson(n));
        emit(obj("type", "cluster", "cluster_id", r.clusterId().get(), "controller", nodeJson(r.controller().get()),
                "nodes", nodes));
    }

    static void adminListGroups(Admin admin, Args a) throws Exception {
        List<ConsumerGroupListing> ls = new ArrayList<>(admin.listConsumerGroups().all().get());
        ls.sort(Comparator.comparing(ConsumerGroupListing::groupId));
        for (ConsumerGroupListing l : ls)
            emit(obj("type", "group", "group_id", l.groupId(), "simple", l.isSimpleConsumerGroup(),
                    "state", l.state().map(Object::toString).orElse(null), "group_type", l.type().map(Object::toString).orElse(null)));
    }

    static void adminDescribeGroups(Admin admin, Args a) throws Exception {
        List<String> groups = a.all("--group");
        DescribeConsumerGroupsResult r = admin.describeConsumerGroups(groups);
        for (String g : groups) {
            try {
                ConsumerGroupDescription d = r.describedGroups().get(g).get();
                List<Object> members = new ArrayList<>();
                List<MemberDescription> ms = new ArrayList<>(d.members());
                ms.sort(Comparator.comparing(MemberDescription::consumerId));
                for (MemberDescription m : ms)
                    members.add(obj("member_id", m.consumerId(), "group_instance_id", m.groupInstanceId(),
                            "client_id", m.clientId(), "host", m.host(), "assignment", tpList(m.assignment().topicPartitions())));
                Object groupEpoch = null;   // 4.x: present only when described through ConsumerGroupDescribe
                try {
                    groupEpoch = ((Optional<?>) d.getClass().getMethod("groupEpoch").invoke(d)).orElse(null);
                } catch (NoSuchMethodException e) { /* 3.9 */ }
                emit(obj("type", "group", "group_id", d.groupId(), "simple", d.isSimpleConsumerGroup(),
                        "group_epoch", groupEpoch,
                        "state", String.valueOf(d.state()), "assignor", d.partitionAssignor(),
                        "coordinator", d.coordinator() == null ? null : d.coordinator().id(), "members", members));
            } catch (ExecutionException e) {
                error(e, "group", g);
            }
        }
    }

    static void adminListGroupOffsets(Admin admin, Args a) throws Exception {
        String g = a.req("--group");
        try {
            Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(g).partitionsToOffsetAndMetadata().get();
            List<TopicPartition> tps = new ArrayList<>(m.keySet());
            tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            for (TopicPartition tp : tps) {
                OffsetAndMetadata o = m.get(tp);
                emit(obj("type", "group_offset", "group_id", g, "topic", tp.topic(), "partition", tp.partition(),
                        "offset", o == null ? null : o.offset(), "metadata", o == null ? null : o.metadata(),
                        "leader_epoch", o == null ? null : o.leaderEpoch()));
            }
        } catch (ExecutionException e) {
            error(e, "group", g);
        }
    }

    static void adminDeleteGroups(Admin admin, Args a) throws Exception {
        for (String g : a.all("--group")) {
            try {
                admin.deleteConsumerGroups(List.of(g)).all().get();
                emit(obj("type", "deleted_group", "group_id", g));
            } catch (ExecutionException e) {
                error(e, "group", g);
            }
        }
    }

    interface AdminCmd { void run(Admin admin, Args a) throws Exception; }

    static final Map<String, AdminCmd> ADMIN = new TreeMap<>();
    static {
        ADMIN.put("admin-list-offsets", SamsaJavaClient::adminListOffsets);
        ADMIN.put("admin-describe-topics", SamsaJavaClient::adminDescribeTopics);
        ADMIN.put("admin-list-topics", SamsaJavaClient::adminListTopics);
        ADMIN.put("admin-create-topic", SamsaJavaClient::adminCreateTopic);
        ADMIN.put("admin-delete-topic", SamsaJavaClient::adminDeleteTopic);
        ADMIN.put("admin-create-partitions", SamsaJavaClient::adminCreatePartitions);
        ADMIN.put("admin-delete-records", SamsaJavaClient::adminDeleteRecords);
        ADMIN.put("admin-describe-configs", SamsaJavaClient::adminDescribeConfigs);
        ADMIN.put("admin-alter-configs", SamsaJavaClient::adminAlterConfigs);
        ADMIN.put("admin-describe-cluster", SamsaJavaClient::adminDescribeCluster);
        ADMIN.put("admin-list-groups", SamsaJavaClient::adminListGroups);
        ADMIN.put("admin-describe-groups", SamsaJavaClient::adminDescribeGroups);
        ADMIN.put("admin-list-group-offsets", SamsaJavaClient::adminListGroupOffsets);
        ADMIN.put("admin-delete-groups", SamsaJavaClient::adminDeleteGroups);
        ADMIN.put("admin-console-apis", SamsaJavaClient::adminConsoleApis);
    }

    /**
     * Loads the client classes without a broker (everything points at a closed port and gives up fast), so
     * that a JVM run with -XX:ArchiveClassesAtExit writes a class-data archive that later runs start from.
     */
    static void train(Args a) {
        a.opts.putIfAbsent("--bootstrap", List.of("127.0.0.1:1"));
        a.opts.put("--prop", List.of("default.api.timeout.ms=400", "request.timeout.ms=300", "max.block.ms=300",
                "delivery.timeout.ms=600", "linger.ms=0"));
        TopicPartition tp = new TopicPartition("train", 0);
        try (Admin admin = admin(a)) {
            admin.describeCluster().clusterId().get();
        } catch (Exception e) { /* expected: nothing listens */ }
        Properties pp = common(a, "samsa-java-train");
        pp.put("key.serializer", ByteArraySerializer.class.getName());
        pp.put("value.serializer", ByteArraySerializer.class.getName());
        overrides(pp, a);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp)) {
            producer.send(new ProducerRecord<>("train", bytes("k"), bytes("v")), (md, ex) -> { }).get();
        } catch (Exception e) { /* expected */ }
        Properties cp = consumerProps(a, "samsa-java-train");
        cp.put("group.id", "train");
        overrides(cp, a);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            c.poll(Duration.ofMillis(200));
        } catch (Exception e) { /* expected */ }
        emit(obj("type", "trained"));
        StringBuilder sb = new StringBuilder();
        json(sb, obj("a", List.of(1, "x", true), "b", Optional.empty()));
    }

    public static void main(String[] argv) {
        int code = 0;
        try {
            if (argv.length == 0) throw new IllegalArgumentException("usage: SamsaJavaClient <subcommand> --bootstrap HOST:PORT ...");
            String cmd = argv[0];
            Args a = new Args(argv, 1);
            if (cmd.equals("train")) train(a);
            else if (cmd.equals("version")) emit(obj("type", "version", "kafka_clients", AppInfoVersion.get()));
            else if (cmd.equals("produce")) produce(a);
            else if (cmd.equals("fence")) fence(a);
            else if (cmd.equals("transform")) transform(a);
            else if (cmd.equals("consume-assign")) consumeAssign(a);
            else if (cmd.equals("consume-group")) consumeGroup(a);
            else if (ADMIN.containsKey(cmd)) {
                try (Admin admin = admin(a)) { ADMIN.get(cmd).run(admin, a); }
            } else throw new IllegalArgumentException("unknown subcommand " + cmd + "; known: produce, fence, consume-assign, "
                    + "consume-group, version, train, " + String.join(", ", ADMIN.keySet()));
            if (reportedError) code = 3;
        } catch (IllegalArgumentException e) {
            System.err.println("usage error: " + e.getMessage());
            code = 2;
        } catch (Throwable t) {
            error(t, "fatal", true);
            t.printStackTrace();
            code = 1;
        }
        OUT.flush();
        System.err.flush();
        // exit, not return: do not wait on non-daemon client threads that a failed close may leave behind.
        System.exit(code);
    }

    static final class AppInfoVersion {
        static String get() { return org.apache.kafka.common.utils.AppInfoParser.getVersion(); }
    }

    // ---------------------------------------------------------------- stderr logging for the client
    /** A minimal SLF4J 2 provider so the client's own warnings reach stderr (registered via META-INF/services). */
    public static final class StderrLogProvider implements org.slf4j.spi.SLF4JServiceProvider {
        static final int LEVEL = levelOf(System.getenv().getOrDefault("SAMSA_JAVA_LOG", "warn"));
        private final org.slf4j.IMarkerFactory markers = new org.slf4j.helpers.BasicMarkerFactory();
        private final org.slf4j.spi.MDCAdapter mdc = new org.slf4j.helpers.NOPMDCAdapter();
        private final Map<String, org.slf4j.Logger> loggers = new java.util.concurrent.ConcurrentHashMap<>();

        static int levelOf(String s) {
            switch (s.toLowerCase(Locale.ROOT)) {
                case "trace": return 0;
                case "debug": return 10;
                case "info": return 20;
                case "warn": return 30;
                case "error": return 40;
                default: return 100;
            }
        }

        public org.slf4j.ILoggerFactory getLoggerFactory() { return name -> loggers.computeIfAbsent(name, StderrLogger::new); }
        public org.slf4j.IMarkerFactory getMarkerFactory() { return markers; }
        public org.slf4j.spi.MDCAdapter getMDCAdapter() { return mdc; }
        public String getRequestedApiVersion() { return "2.0.99"; }
        public void initialize() { }
    }

    static final class StderrLogger extends org.slf4j.helpers.LegacyAbstractLogger {
        StderrLogger(String name) { this.name = name; }
        boolean on(int l) { return StderrLogProvider.LEVEL <= l; }
        public boolean isTraceEnabled() { return on(0); }
        public boolean isDebugEnabled() { return on(10); }
        public boolean isInfoEnabled() { return on(20); }
        public boolean isWarnEnabled() { return on(30); }
        public boolean isErrorEnabled() { return on(40); }
        protected String getFullyQualifiedCallerName() { return null; }

        protected void handleNormalizedLoggingCall(org.slf4j.event.Level level, org.slf4j.Marker marker, String msg,
                                                   Object[] args, Throwable t) {
            String text = org.slf4j.helpers.MessageFormatter.basicArrayFormat(msg, args);
            String shortName = name.substring(name.lastIndexOf('.') + 1);
            synchronized (System.err) {
                System.err.println(java.time.LocalTime.now() + " " + level + " " + shortName + ": " + text);
                if (t != null) t.printStackTrace();
            }
        }
    }
}
