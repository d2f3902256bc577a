import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Kafka 4.2's share-group features with the Java client 4.3, for tests/clients/test_share_groups_v2.py
 * (run by tests/support/javaclient.py in source-file mode). Prints one JSON line per event.
 *
 *   consume: --bootstrap B --topic T --group G [--acquire-mode batch_optimized|record_limit]
 *            [--max-poll-records N] [--renew V --hold-ms MS] [--reject V,..] [--expect N]
 *            [--idle-ms MS] [--max-ms MS]
 *     Explicit acknowledgement: every record is ACCEPTed, except values named by --reject (REJECTed)
 *     and --renew: that one is "processed" for --hold-ms, RENEWed (KIP-1222) each time the client
 *     returns it (every 500 ms or so), then ACCEPTed. Prints each poll's size ("poll" lines) and
 *     each record returned ("record" lines).
 *   configs: --bootstrap B --group G [--set k=v,..] [--delete k,..]
 *     Admin.incrementalAlterConfigs on ConfigResource.Type.GROUP, then describeConfigs of the group:
 *     one "config" line per entry.
 */
public class ShareV2Client {
    static String q(String s) { return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        try {
            if (a.containsKey("topic")) consume(a); else configs(a);
        } catch (Throwable t) {
            System.out.println("{\"type\": \"error\", \"error\": " + q(t.getClass().getSimpleName()) + ", \"message\": " + q(String.valueOf(t.getMessage())) + "}");
            t.printStackTrace();
            System.exit(3);
        }
        System.exit(0);
    }

    static void configs(Map<String, String> a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        try (Admin admin = Admin.create(p)) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, a.get("group"));
            List<AlterConfigOp> ops = new ArrayList<>();
            for (String kv : a.getOrDefault("set", "").split(",")) {
                if (kv.isEmpty()) continue;
                String[] parts = kv.split("=", 2);
                ops.add(new AlterConfigOp(new ConfigEntry(parts[0], parts[1]), AlterConfigOp.OpType.SET));
            }
            for (String k : a.getOrDefault("delete", "").split(",")) {
                if (!k.isEmpty()) ops.add(new AlterConfigOp(new ConfigEntry(k, null), AlterConfigOp.OpType.DELETE));
            }
            if (!ops.isEmpty()) {
                try {
                    admin.incrementalAlterConfigs(Map.of(group, ops)).all().get();
                    System.out.println("{\"type\": \"altered\"}");
                } catch (java.util.concurrent.ExecutionException e) {
                    System.out.println("{\"type\": \"alter_error\", \"error\": " + q(e.getCause().getClass().getSimpleName())
                        + ", \"message\": " + q(e.getCause().getMessage()) + "}");
                }
            }
            Config c = admin.describeConfigs(List.of(group)).all().get().get(group);
            for (ConfigEntry e : c.entries()) {
                System.out.println("{\"type\": \"config\", \"name\": " + q(e.name()) + ", \"value\": " + q(e.value())
                    + ", \"source\": " + q(String.valueOf(e.source())) + "}");
            }
        }
    }

    static void consume(Map<String, String> a) throws Exception {
        Set<String> reject = new HashSet<>(Arrays.asList(a.getOrDefault("reject", "").split(",")));
        String renew = a.get("renew");
        long holdMs = Long.parseLong(a.getOrDefault("hold-ms", "0"));
        int expect = Integer.parseInt(a.getOrDefault("expect", "-1"));
        long idleMs = Long.parseLong(a.getOrDefault("idle-ms", "5000"));
        long maxMs = Long.parseLong(a.getOrDefault("max-ms", "60000"));
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        p.put("group.id", a.get("group"));
        p.put("share.acknowledgement.mode", "explicit");
        p.put("share.acquire.mode", a.getOrDefault("acquire-mode", "batch_optimized"));
        p.put("max.poll.records", a.getOrDefault("max-poll-records", "500"));
        p.put("client.id", a.getOrDefault("client-id", "share-v2-" + ProcessHandle.current().pid()));
        Set<String> accepted = new HashSet<>();
        int delivered = 0;
        long start = System.currentTimeMillis(), lastRecord = -1, holdUntil = -1;
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(a.get("topic")));
            while (System.currentTimeMillis() - start < maxMs) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                if (!rs.isEmpty()) System.out.println("{\"type\": \"poll\", \"count\": " + rs.count() + "}");
                for (ConsumerRecord<String, String> r : rs) {
                    delivered++;
                    int dc = r.deliveryCount().map(Short::intValue).orElse(-1);
                    String ack;
                    if (r.value() != null && r.value().equals(renew)) {
                        if (holdUntil < 0) holdUntil = System.currentTimeMillis() + holdMs;
                        Thread.sleep(500);          // "processing"; the client returns it again once renewed
                        ack = System.currentTimeMillis() < holdUntil ? "renew" : "accept";
                    } else {
                        ack = reject.contains(r.value()) ? "reject" : "accept";
                    }
                    c.acknowledge(r, ack.equals("renew") ? AcknowledgeType.RENEW
                        : ack.equals("reject") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
                    if (ack.equals("accept")) accepted.add(r.value());
                    System.out.println("{\"type\": \"record\", \"offset\": " + r.offset() + ", \"value\": " + q(r.value())
                        + ", \"delivery_count\": " + dc + ", \"ack\": " + q(ack) + ", \"at\": " + System.currentTimeMillis() + "}");
                }
                System.out.flush();
                if (!rs.isEmpty()) {
                    lastRecord = System.currentTimeMillis();
                    Map<?, Optional<org.apache.kafka.common.KafkaException>> res = c.commitSync();
                    for (Optional<org.apache.kafka.common.KafkaException> e : res.values()) {
                        if (e.isPresent()) System.out.println("{\"type\": \"commit_error\", \"error\": " + q(e.get().getClass().getSimpleName()) + "}");
                    }
                    System.out.flush();
                }
                if (expect >= 0 && accepted.size() >= expect) break;
                if (lastRecord >= 0 && System.currentTimeMillis() - lastRecord > idleMs) break;
            }
            System.out.println("{\"type\": \"summary\", \"delivered\": " + delivered + ", \"accepted\": " + accepted.size() + "}");
        }
    }
}
