import java.util.*;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * The Java Admin's share-group offset calls (KIP-932, kafka-clients 4.1+) for
 * tests/clients/test_share_group_offsets.py, run by tests/support/javaclient.py in source-file mode.
 * One JSON line per result:
 *
 *   --bootstrap B --group G --alter T:P=O,...   alterShareGroupOffsets: {"type":"altered"} or an error line
 *   --bootstrap B --group G --list [T:P,...]    listShareGroupOffsets (all when no partitions):
 *                                               one {"type":"offset",...} line per partition
 *   --bootstrap B --group G --delete T,...      deleteShareGroupOffsets: {"type":"deleted"} or an error line
 *
 * An error line is {"type":"error","op":...,"error":<exception class>,"message":...}; exit 3 then.
 */
public class ShareOffsetsAdmin {
    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String key = args[i];
            String value = i + 1 < args.length && !args[i + 1].startsWith("--") ? args[++i] : "";
            opts.put(key, value);
        }
        String group = opts.get("--group");
        Properties props = new Properties();
        props.put("bootstrap.servers", opts.get("--bootstrap"));
        boolean failed = false;
        try (Admin admin = Admin.create(props)) {
            try {
                if (opts.containsKey("--alter")) {
                    Map<TopicPartition, Long> offsets = new LinkedHashMap<>();
                    for (String item : opts.get("--alter").split(",")) {
                        String[] tpo = item.split("=");
                        offsets.put(tp(tpo[0]), Long.parseLong(tpo[1]));
                    }
                    admin.alterShareGroupOffsets(group, offsets).all().get();
                    System.out.println("{\"type\":\"altered\"}");
                } else if (opts.containsKey("--list")) {
                    ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
                    if (!opts.get("--list").isEmpty()) {
                        List<TopicPartition> tps = new ArrayList<>();
                        for (String item : opts.get("--list").split(",")) tps.add(tp(item));
                        spec.topicPartitions(tps);
                    }
                    Map<TopicPartition, SharePartitionOffsetInfo> offsets =
                        admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group).get();
                    List<TopicPartition> sorted = new ArrayList<>(offsets.keySet());
                    sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparing(TopicPartition::partition));
                    for (TopicPartition tp : sorted) {
                        SharePartitionOffsetInfo info = offsets.get(tp);
                        System.out.printf("{\"type\":\"offset\",\"topic\":\"%s\",\"partition\":%d,\"start_offset\":%s,"
                                + "\"leader_epoch\":%s,\"lag\":%s}%n", tp.topic(), tp.partition(),
                            info == null ? "null" : info.startOffset(),
                            info == null ? "null" : info.leaderEpoch().map(String::valueOf).orElse("null"),
                            info == null ? "null" : info.lag().map(String::valueOf).orElse("null"));
                    }
                } else if (opts.containsKey("--delete")) {
                    admin.deleteShareGroupOffsets(group, new HashSet<>(Arrays.asList(opts.get("--delete").split(","))))
                        .all().get();
                    System.out.println("{\"type\":\"deleted\"}");
                }
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause();
                System.out.printf("{\"type\":\"error\",\"error\":\"%s\",\"message\":\"%s\"}%n",
                    cause.getClass().getSimpleName(), String.valueOf(cause.getMessage()).replace("\"", "'"));
                failed = true;
            }
        }
        System.exit(failed ? 3 : 0);
    }

    static TopicPartition tp(String s) {
        int colon = s.lastIndexOf(':');
        return new TopicPartition(s.substring(0, colon), Integer.parseInt(s.substring(colon + 1)));
    }
}
