// Driver runs Kafka's own server-side assignors (the kafka-group-coordinator
// jar of one release, from Maven Central) over the cases in a groupquake
// vector-input file and prints each case followed by Kafka's result. The Go
// test TestKafkaVectors replays the output against coordinator/assignor.
//
// Orders are explicit in the input and kept with LinkedHashMap/LinkedHashSet:
// member lines give memberIds() order, topic lists give the subscription's
// iteration order, "owned" lines give the previous target's topic order and
// partition order. Run on a JDK 19+ (HashSet(Collection) sizing changed there).
//
// Usage: see regen.sh beside this file.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class Driver {
    static final class Member {
        String id;
        Optional<String> instance;
        Optional<String> rack;
        Set<Uuid> topics = new LinkedHashSet<>();
        Map<Uuid, Set<Integer>> owned = new LinkedHashMap<>();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        List<String> lines = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("#") || line.isBlank()) {
                out.append(line).append('\n');
                continue;
            }
            if (line.equals("end")) {
                runCase(lines, out);
                lines.clear();
            } else {
                lines.add(line);
            }
        }
        PrintStream stdout = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        stdout.print(out);
        stdout.flush();
    }

    static List<Integer> parseInts(String s) {
        List<Integer> ps = new ArrayList<>();
        if (!s.equals("-")) for (String p : s.split(",")) ps.add(Integer.parseInt(p));
        return ps;
    }

    static void runCase(List<String> lines, StringBuilder out) {
        String[] head = lines.get(0).split(" ");
        ConsumerGroupPartitionAssignor assignor = head[2].equals("uniform") ? new UniformAssignor() : new RangeAssignor();
        SubscriptionType type = head[3].equals("Homogeneous") ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        Map<Uuid, Integer> partitions = new HashMap<>();
        Map<String, Member> members = new LinkedHashMap<>();
        for (String l : lines) {
            out.append(l).append('\n');
            String[] f = l.split(" ");
            switch (f[0]) {
                case "topic" -> partitions.put(Uuid.fromString(f[1]), Integer.parseInt(f[2]));
                case "member" -> {
                    Member m = new Member();
                    m.id = f[1];
                    m.instance = f[2].equals("-") ? Optional.empty() : Optional.of(f[2]);
                    m.rack = f[3].equals("-") ? Optional.empty() : Optional.of(f[3]);
                    if (!f[4].equals("-")) for (String t : f[4].split(",")) m.topics.add(Uuid.fromString(t));
                    members.put(m.id, m);
                }
                case "owned" -> members.get(f[1]).owned.put(Uuid.fromString(f[2]), new LinkedHashSet<>(parseInts(f[3])));
                default -> { }
            }
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (Member m : members.values()) {
            specs.put(m.id, new MemberSubscriptionAndAssignmentImpl(m.rack, m.instance, m.topics, new Assignment(m.owned)));
            m.owned.forEach((t, ps) -> ps.forEach(p -> inverted.computeIfAbsent(t, k -> new HashMap<>()).put(p, m.id)));
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return partitions.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Collections.emptySet();
            }
        };
        try {
            GroupAssignment result = assignor.assign(new GroupSpecImpl(Collections.unmodifiableMap(specs), type, inverted), describer);
            out.append("result ok\n");
            for (Map.Entry<String, MemberAssignment> e : new TreeMap<>(result.members()).entrySet()) {
                out.append("outmember ").append(e.getKey()).append('\n');
                TreeMap<String, Set<Integer>> byTopic = new TreeMap<>();
                e.getValue().partitions().forEach((t, ps) -> byTopic.put(t.toString(), new TreeSet<>(ps)));
                byTopic.forEach((t, ps) -> {
                    if (ps.isEmpty()) return;
                    StringBuilder sb = new StringBuilder();
                    for (int p : ps) sb.append(sb.length() == 0 ? "" : ",").append(p);
                    out.append("out ").append(e.getKey()).append(' ').append(t).append(' ').append(sb).append('\n');
                });
            }
        } catch (Exception ex) {
            out.append("result error ").append(ex.getClass().getSimpleName()).append('\n');
        }
        out.append("end\n");
    }
}
