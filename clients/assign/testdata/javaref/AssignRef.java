// AssignRef runs the Java client's classic assignors on the cases that
// javaref_test.go writes and prints what they assign, so that
// testdata/java_vectors.txt records Apache Kafka's own answers.
//
// Run (Java 17+, single-file source launch):
//   java -cp kafka-clients-4.4.0.jar:slf4j-api-1.7.36.jar AssignRef.java < cases.txt > out.txt
//
// It goes through ConsumerPartitionAssignor.assign(Cluster, GroupSubscription),
// the call ConsumerCoordinator.onLeaderElected makes, with a subscriptions
// HashMap filled in the order the cases list the members (the JoinGroup
// response order) and brokers without racks.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public class AssignRef {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        String name = null, assignorName = null;
        Map<String, Integer> topics = new HashMap<>();
        List<String> order = new ArrayList<>();
        Map<String, Subscription> subs = new HashMap<>();
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ", -1);
            switch (f[0]) {
                case "case":
                    name = f[1]; assignorName = f[2];
                    // Fresh maps: HashMap.clear() keeps the table size, and the
                    // sticky assignors' output depends on the iteration order of
                    // subscriptions, which ConsumerCoordinator builds anew each time.
                    topics = new HashMap<>(); order = new ArrayList<>(); subs = new HashMap<>();
                    break;
                case "topic":
                    topics.put(f[1], Integer.parseInt(f[2]));
                    break;
                case "member": {
                    String id = f[1];
                    Optional<String> inst = f[2].equals("-") ? Optional.empty() : Optional.of(f[2].substring(1));
                    String rack = f[3].equals("-") ? null : f[3].substring(1);
                    int gen = Integer.parseInt(f[4]);
                    ByteBuffer ud = f[5].equals("-") ? null : ByteBuffer.wrap(hex(f[5].substring(1)));
                    List<String> ts = f[6].equals("-") ? new ArrayList<>() : new ArrayList<>(Arrays.asList(f[6].split(",")));
                    List<TopicPartition> owned = new ArrayList<>();
                    if (!f[7].equals("-")) {
                        for (String tps : f[7].split(";")) {
                            String[] kv = tps.split(":");
                            for (String p : kv[1].split("\\.")) owned.add(new TopicPartition(kv[0], Integer.parseInt(p)));
                        }
                    }
                    Subscription s = new Subscription(ts, ud, owned, gen,
                        rack == null || rack.isEmpty() ? Optional.empty() : Optional.of(rack));
                    s.setGroupInstanceId(inst);
                    subs.put(id, s);
                    order.add(id);
                    break;
                }
                case "end":
                    run(name, assignorName, topics, order, subs);
                    break;
                default:
                    throw new IllegalArgumentException("bad line: " + line);
            }
        }
    }

    static void run(String name, String assignorName, Map<String, Integer> topics, List<String> order, Map<String, Subscription> subs) {
        ConsumerPartitionAssignor a;
        switch (assignorName) {
            case "range": a = new RangeAssignor(); break;
            case "roundrobin": a = new RoundRobinAssignor(); break;
            case "sticky": a = new StickyAssignor(); break;
            case "cooperative-sticky": a = new CooperativeStickyAssignor(); break;
            default: throw new IllegalArgumentException(assignorName);
        }
        Node node = new Node(0, "localhost", 9092);
        List<PartitionInfo> parts = new ArrayList<>();
        for (Map.Entry<String, Integer> e : topics.entrySet())
            for (int p = 0; p < e.getValue(); p++)
                parts.add(new PartitionInfo(e.getKey(), p, node, new Node[] {node}, new Node[] {node}));
        Cluster cluster = new Cluster("c", List.of(node), parts, new HashSet<>(), new HashSet<>());
        StringBuilder out = new StringBuilder("case " + name + "\n");
        try {
            Map<String, ConsumerPartitionAssignor.Assignment> res = a.assign(cluster, new GroupSubscription(subs)).groupAssignment();
            for (String id : order) {
                ConsumerPartitionAssignor.Assignment as = res.get(id);
                TreeMap<String, TreeSet<Integer>> byTopic = new TreeMap<>();
                if (as != null)
                    for (TopicPartition tp : as.partitions())
                        byTopic.computeIfAbsent(tp.topic(), t -> new TreeSet<>()).add(tp.partition());
                StringBuilder m = new StringBuilder();
                for (Map.Entry<String, TreeSet<Integer>> e : byTopic.entrySet()) {
                    if (m.length() > 0) m.append(';');
                    m.append(e.getKey()).append(':');
                    StringBuilder ps = new StringBuilder();
                    for (int p : e.getValue()) { if (ps.length() > 0) ps.append('.'); ps.append(p); }
                    m.append(ps);
                }
                out.append("want ").append(id).append(' ').append(as == null ? "absent" : m.length() == 0 ? "-" : m.toString()).append('\n');
            }
        } catch (RuntimeException e) {
            out.append("error ").append(e.getClass().getSimpleName()).append('\n');
        }
        out.append("end");
        System.out.println(out);
    }

    static byte[] hex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }
}
