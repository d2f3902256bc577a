import java.time.Duration;
import java.util.*;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * A KafkaShareConsumer (KIP-932, kafka-clients 4.1+) for tests/clients/test_share_groups.py, run by
 * tests/support/javaclient.py in source-file mode (the 3.9 client has no share consumer, so it is not part
 * of SamsaJavaClient). Prints one JSON line per delivery and a summary.
 *
 *   --bootstrap B --topic T --group G [--release V,..] [--release-always V,..] [--die-after N]
 *   [--expect N] [--idle-ms MS]
 *   [--max-ms MS] [--sleep-ms MS] [--max-poll-records N] [--implicit true]
 *   --bootstrap B --describe G          (Admin.describeShareGroups: one "group" line)
 *
 * Explicit acknowledgement: every record is ACCEPTed, except a value named by --release on its first
 * delivery or by --release-always on every delivery (RELEASEd). --die-after N halts the JVM once N
 * records were delivered, acknowledging nothing (a crashed consumer). --implicit uses the client's
 * default mode instead (every delivered record ACCEPTed by the next poll or close). The consumer
 * stops after --expect distinct accepted values, after --idle-ms without records once it has seen
 * one, or after --max-ms.
 */
public class ShareConsumerClient {
    static String q(String s) { return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }

    public static void main(String[] argv) {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < argv.length; i += 2) a.put(argv[i].replaceFirst("^--", ""), argv[i + 1]);
        if (a.containsKey("describe")) { describe(a); return; }
        boolean implicit = Boolean.parseBoolean(a.getOrDefault("implicit", "false"));
        Set<String> release = new HashSet<>(Arrays.asList(a.getOrDefault("release", "").split(",")));
        Set<String> releaseAlways = new HashSet<>(Arrays.asList(a.getOrDefault("release-always", "").split(",")));
        int dieAfter = Integer.parseInt(a.getOrDefault("die-after", "-1"));
        int expect = Integer.parseInt(a.getOrDefault("expect", "-1"));
        long idleMs = Long.parseLong(a.getOrDefault("idle-ms", "5000"));
        long maxMs = Long.parseLong(a.getOrDefault("max-ms", "60000"));
        long sleepMs = Long.parseLong(a.getOrDefault("sleep-ms", "0"));
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        p.put("group.id", a.get("group"));
        p.put("share.acknowledgement.mode", implicit ? "implicit" : "explicit");
        p.put("max.poll.records", a.getOrDefault("max-poll-records", "10"));
        p.put("client.id", a.getOrDefault("client-id", "share-" + ProcessHandle.current().pid()));
        int delivered = 0;
        Set<String> accepted = new HashSet<>();
        long start = System.currentTimeMillis(), lastRecord = -1;
        try (KafkaShareConsumer<String, String> c =
                 new KafkaShareConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(a.get("topic")));
            System.out.println("{\"type\": \"subscribed\"}");
            System.out.flush();
            while (System.currentTimeMillis() - start < maxMs) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : rs) {
                    delivered++;
                    int dc = r.deliveryCount().map(Short::intValue).orElse(-1);
                    String ack = "none";
                    if (dieAfter < 0 && implicit) {
                        ack = "implicit";
                        accepted.add(r.value());
                    } else if (dieAfter < 0) {
                        boolean rel = (release.contains(r.value()) && dc == 1) || releaseAlways.contains(r.value());
                        ack = rel ? "release" : "accept";
                        c.acknowledge(r, rel ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                        if (!rel) accepted.add(r.value());
                    }
                    System.out.println("{\"type\": \"record\", \"partition\": " + r.partition() + ", \"offset\": " + r.offset()
                        + ", \"value\": " + q(r.value()) + ", \"delivery_count\": " + dc + ", \"ack\": " + q(ack) + "}");
                }
                System.out.flush();
                if (dieAfter >= 0 && delivered >= dieAfter) {
                    System.out.println("{\"type\": \"died\", \"delivered\": " + delivered + "}");
                    System.out.flush();
                    Runtime.getRuntime().halt(0);   // no acknowledgement, no close: a crash
                }
                if (!rs.isEmpty()) {
                    lastRecord = System.currentTimeMillis();
                    if (!implicit) c.commitSync();
                }
                if (expect >= 0 && accepted.size() >= expect) break;
                if (lastRecord >= 0 && System.currentTimeMillis() - lastRecord > idleMs) break;
                if (sleepMs > 0) Thread.sleep(sleepMs);
            }
            System.out.println("{\"type\": \"summary\", \"delivered\": " + delivered + ", \"accepted\": " + accepted.size() + "}");
        } catch (Throwable t) {
            System.out.println("{\"type\": \"error\", \"error\": " + q(t.getClass().getSimpleName()) + ", \"message\": " + q(String.valueOf(t.getMessage())) + "}");
            t.printStackTrace();
            System.exit(3);
        }
        System.exit(0);
    }

    static void describe(Map<String, String> a) {
        Properties p = new Properties();
        p.put("bootstrap.servers", a.get("bootstrap"));
        try (Admin admin = Admin.create(p)) {
            String g = a.get("describe");
            ShareGroupDescription d = admin.describeShareGroups(List.of(g)).all().get().get(g);
            StringBuilder members = new StringBuilder();
            for (ShareMemberDescription m : d.members()) {
                if (members.length() > 0) members.append(", ");
                List<String> tps = new ArrayList<>();
                m.assignment().topicPartitions().forEach(tp -> tps.add(q(tp.topic() + "-" + tp.partition())));
                members.append("{\"client_id\": " + q(m.clientId()) + ", \"epoch\": " + m.memberEpoch()
                    + ", \"partitions\": " + tps + "}");
            }
            System.out.println("{\"type\": \"group\", \"group_id\": " + q(d.groupId()) + ", \"state\": " + q(String.valueOf(d.groupState()))
                + ", \"epoch\": " + d.groupEpoch() + ", \"members\": [" + members + "]}");
        } catch (Throwable t) {
            System.out.println("{\"type\": \"error\", \"error\": " + q(t.getClass().getSimpleName()) + ", \"message\": " + q(String.valueOf(t.getMessage())) + "}");
            System.exit(3);
        }
        System.exit(0);
    }
}
