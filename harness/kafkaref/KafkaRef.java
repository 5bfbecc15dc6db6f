// KafkaRef runs Kafka's own group-coordinator classes (the
// kafka-group-coordinator jar of one release and its dependencies, resolved
// from Maven Central) on the cases of a groupquake case file, the same file
// the Go side reads (harness/kafkaref, cases.go says the format):
//
//   KafkaRef print FILE          every case once; prints the result
//   KafkaRef time FILE WARMUP_MS MEASURE_MS MIN_ITERS
//                                every case timed after a warm-up; prints
//                                "time NAME NS_PER_OP ITERATIONS"
//   KafkaRef serve FILE          reads commands from stdin, one a line:
//                                "time NAME MS MIN_ITERS" runs case NAME for
//                                at least MS ms and MIN_ITERS iterations and
//                                prints "time NAME NS_PER_OP ITERATIONS";
//                                "quit" (or the end of stdin) ends it. The
//                                Go side times its own runs between two
//                                commands, so both sides see the same load.
//
// Assign cases go to UniformAssignor or RangeAssignor with a GroupSpecImpl
// whose members, subscriptions and previous targets keep the file's order
// (LinkedHashMap/LinkedHashSet), and whose inverted target assignment is
// built from the previous targets once, as the coordinator keeps it.
// Reconcile cases run CurrentAssignmentBuilder.build() for every member of
// the case, in file order, against a KRaft metadata image holding the
// case's topics (built as Kafka's jmh-benchmarks build theirs). Target cases
// run TargetAssignmentBuilder.build() with the UniformAssignor, set up as
// Kafka's TargetAssignmentBuilderBenchmark sets it up: the members (file
// order, the joiner last), their current targets, the inverted target
// assignment built from them, and a metadata image of the topics.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberState;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.TargetAssignmentBuilder;
import org.apache.kafka.coordinator.group.modern.consumer.ConsumerGroupMember;
import org.apache.kafka.coordinator.group.modern.consumer.CurrentAssignmentBuilder;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;

public class KafkaRef {
    /** One case of the file, ready to run. */
    interface Case {
        String name();

        /** Runs the case once and returns something derived from the result (kept, so the JIT cannot drop the work). */
        int run();

        /** Runs the case once and renders the result. */
        String render();
    }

    static volatile int sink;

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: KafkaRef print FILE | KafkaRef time FILE WARMUP_MS MEASURE_MS MIN_ITERS | KafkaRef serve FILE");
            System.exit(2);
        }
        List<Case> cases = read(Path.of(args[1]));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        switch (args[0]) {
            case "print" -> {
                for (Case c : cases) out.print(c.render());
            }
            case "time" -> {
                long warmup = Long.parseLong(args[2]) * 1_000_000L;
                long measure = Long.parseLong(args[3]) * 1_000_000L;
                int minIters = Integer.parseInt(args[4]);
                for (Case c : cases) {
                    loop(c, warmup, minIters);
                    long start = System.nanoTime();
                    long n = loop(c, measure, minIters);
                    long elapsed = System.nanoTime() - start;
                    out.printf(java.util.Locale.ROOT, "time %s %.2f %d%n", c.name(), (double) elapsed / n, n);
                }
            }
            case "serve" -> serve(cases, out);
            default -> {
                System.err.println("unknown mode " + args[0]);
                System.exit(2);
            }
        }
    }

    static void serve(List<Case> cases, PrintStream out) throws IOException {
        Map<String, Case> byName = new HashMap<>();
        for (Case c : cases) byName.put(c.name(), c);
        BufferedReader in = new BufferedReader(new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ");
            if (f[0].equals("quit")) return;
            Case c = f.length == 4 && f[0].equals("time") ? byName.get(f[1]) : null;
            if (c == null) {
                out.println("error unknown command or case: " + line);
                continue;
            }
            long start = System.nanoTime();
            long n = loop(c, Long.parseLong(f[2]) * 1_000_000L, Integer.parseInt(f[3]));
            long elapsed = System.nanoTime() - start;
            out.printf(java.util.Locale.ROOT, "time %s %.2f %d%n", c.name(), (double) elapsed / n, n);
        }
    }

    /**
     * Runs c for at least ns nanoseconds and minIters iterations and returns the iterations, reading the
     * clock after batches that double until one takes 100µs (the Go side's timeGo does the same), so that
     * reading the clock does not weigh on a case of a few nanoseconds.
     */
    static long loop(Case c, long ns, int minIters) {
        long start = System.nanoTime();
        long n = 0;
        long batch = 1;
        int acc = 0;
        while (true) {
            for (long i = 0; i < batch; i++) acc += c.run();
            n += batch;
            long elapsed = System.nanoTime() - start;
            if (n >= minIters && elapsed >= ns) break;
            if (elapsed < 100_000L * n / batch) batch *= 2;
        }
        sink = acc;
        return n;
    }

    static List<Case> read(Path file) throws IOException {
        List<Case> cases = new ArrayList<>();
        List<String[]> block = new ArrayList<>();
        try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank() || line.startsWith("#")) continue;
                String[] f = line.split(" ");
                if (f[0].equals("end")) {
                    String[] head = block.get(0);
                    cases.add(switch (head[0]) {
                        case "assign" -> assignCase(block);
                        case "target" -> targetCase(block);
                        default -> reconcileCase(block);
                    });
                    block.clear();
                } else {
                    block.add(f);
                }
            }
        }
        return cases;
    }

    static List<Integer> ints(String s) {
        List<Integer> out = new ArrayList<>();
        if (!s.equals("-")) for (String p : s.split(",")) out.add(Integer.parseInt(p));
        return out;
    }

    /** p:e,p:e → partition → epoch, in file order. */
    static Map<Integer, Integer> epochs(String s) {
        Map<Integer, Integer> out = new LinkedHashMap<>();
        if (!s.equals("-")) {
            for (String pe : s.split(",")) {
                int i = pe.indexOf(':');
                out.put(Integer.parseInt(pe.substring(0, i)), Integer.parseInt(pe.substring(i + 1)));
            }
        }
        return out;
    }

    // ---- assign cases ----
    //   assign NAME uniform|range Homogeneous|Heterogeneous
    //   topic ID PARTITIONS
    //   subs S ID,ID,...
    //   member ID RACK|- S
    //   owned MEMBER TOPIC P,P,...
    //   end

    static Case assignCase(List<String[]> lines) {
        String[] head = lines.get(0);
        String name = head[1];
        ConsumerGroupPartitionAssignor assignor = head[2].equals("uniform") ? new UniformAssignor() : new RangeAssignor();
        SubscriptionType type = head[3].equals("Homogeneous") ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        Map<Uuid, Integer> partitions = new HashMap<>();
        Map<String, Set<Uuid>> subs = new HashMap<>();
        Map<String, String[]> members = new LinkedHashMap<>();
        Map<String, Map<Uuid, Set<Integer>>> owned = new HashMap<>();
        for (String[] f : lines) {
            switch (f[0]) {
                case "topic" -> partitions.put(Uuid.fromString(f[1]), Integer.parseInt(f[2]));
                case "subs" -> {
                    Set<Uuid> ids = new LinkedHashSet<>();
                    if (!f[2].equals("-")) for (String t : f[2].split(",")) ids.add(Uuid.fromString(t));
                    subs.put(f[1], Collections.unmodifiableSet(ids));
                }
                case "member" -> members.put(f[1], f);
                case "owned" -> owned.computeIfAbsent(f[1], k -> new LinkedHashMap<>())
                    .put(Uuid.fromString(f[2]), new LinkedHashSet<>(ints(f[3])));
                default -> { }
            }
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (String[] f : members.values()) {
            Optional<String> rack = f[2].equals("-") ? Optional.empty() : Optional.of(f[2]);
            Map<Uuid, Set<Integer>> prev = owned.getOrDefault(f[1], Map.of());
            specs.put(f[1], new MemberSubscriptionAndAssignmentImpl(rack, Optional.empty(), subs.get(f[3]), new Assignment(prev)));
            prev.forEach((t, ps) -> ps.forEach(p -> inverted.computeIfAbsent(t, k -> new HashMap<>()).put(p, f[1])));
        }
        GroupSpecImpl spec = new GroupSpecImpl(Collections.unmodifiableMap(specs), type, inverted);
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                return partitions.getOrDefault(topicId, -1);
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        return new Case() {
            public String name() {
                return name;
            }

            public int run() {
                return assignor.assign(spec, describer).members().size();
            }

            public String render() {
                StringBuilder sb = new StringBuilder("assign ").append(name).append('\n');
                GroupAssignment result;
                try {
                    result = assignor.assign(spec, describer);
                } catch (Exception e) {
                    return failed(sb, e);
                }
                appendMembers(sb, result.members());
                return sb.append("end\n").toString();
            }
        };
    }

    /** Replays the line `topic NAME ID PARTITIONS` into delta: the topic and its partitions. */
    static void replayTopic(MetadataDelta delta, String[] f) {
        Uuid id = Uuid.fromString(f[2]);
        delta.replay(new TopicRecord().setTopicId(id).setName(f[1]));
        int n = Integer.parseInt(f[3]);
        for (int i = 0; i < n; i++) {
            delta.replay(new PartitionRecord().setTopicId(id).setPartitionId(i).setReplicas(List.of(i % 4, (i + 1) % 4)));
        }
    }

    /** Ends the block of a case whose run threw e with the exception's class. */
    static String failed(StringBuilder sb, Exception e) {
        return sb.append("error ").append(e.getClass().getSimpleName()).append("\nend\n").toString();
    }

    /** Appends each member's non-empty partitions by topic, members and topics in order. */
    static void appendMembers(StringBuilder sb, Map<String, MemberAssignment> members) {
        for (Map.Entry<String, MemberAssignment> e : new TreeMap<>(members).entrySet()) {
            sb.append("member ").append(e.getKey()).append('\n');
            TreeMap<String, Set<Integer>> byTopic = new TreeMap<>();
            e.getValue().partitions().forEach((t, ps) -> {
                if (!ps.isEmpty()) byTopic.put(t.toString(), new TreeSet<>(ps));
            });
            byTopic.forEach((t, ps) -> sb.append("  ").append(t).append(' ').append(join(ps)).append('\n'));
        }
    }

    static String join(Set<Integer> ps) {
        StringBuilder sb = new StringBuilder();
        for (int p : ps) sb.append(sb.length() == 0 ? "" : ",").append(p);
        return sb.toString();
    }

    // ---- reconcile cases ----
    //   reconcile NAME TARGET_EPOCH SUBSCRIPTION_CHANGED(true|false)
    //   topic NAME ID PARTITIONS
    //   member ID STATE EPOCH PREV_EPOCH NAME,NAME,...
    //   assigned MEMBER TOPIC P:E,...
    //   pending MEMBER TOPIC P:E,...
    //   target MEMBER TOPIC P,P,...
    //   owner TOPIC P:E,...          (current partition epochs; absent means -1)
    //   end

    static Case reconcileCase(List<String[]> lines) {
        String[] head = lines.get(0);
        String name = head[1];
        int targetEpoch = Integer.parseInt(head[2]);
        boolean subscriptionChanged = Boolean.parseBoolean(head[3]);
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        Map<String, String[]> memberLines = new LinkedHashMap<>();
        Map<String, Map<Uuid, Map<Integer, Integer>>> assigned = new HashMap<>();
        Map<String, Map<Uuid, Map<Integer, Integer>>> pending = new HashMap<>();
        Map<String, Map<Uuid, Set<Integer>>> targets = new HashMap<>();
        Map<Uuid, Map<Integer, Integer>> owners = new HashMap<>();
        for (String[] f : lines) {
            switch (f[0]) {
                case "topic" -> replayTopic(delta, f);
                case "member" -> memberLines.put(f[1], f);
                case "assigned" -> assigned.computeIfAbsent(f[1], k -> new HashMap<>()).put(Uuid.fromString(f[2]), epochs(f[3]));
                case "pending" -> pending.computeIfAbsent(f[1], k -> new HashMap<>()).put(Uuid.fromString(f[2]), epochs(f[3]));
                case "target" -> targets.computeIfAbsent(f[1], k -> new HashMap<>()).put(Uuid.fromString(f[2]), new HashSet<>(ints(f[3])));
                case "owner" -> owners.put(Uuid.fromString(f[1]), new HashMap<>(epochs(f[2])));
                default -> { }
            }
        }
        CoordinatorMetadataImage image = new KRaftCoordinatorMetadataImage(delta.apply(MetadataProvenance.EMPTY));
        List<ConsumerGroupMember> members = new ArrayList<>();
        List<Assignment> memberTargets = new ArrayList<>();
        for (String[] f : memberLines.values()) {
            List<String> names = f[5].equals("-") ? List.of() : List.of(f[5].split(","));
            members.add(new ConsumerGroupMember.Builder(f[1])
                .setState(MemberState.valueOf(f[2]))
                .setMemberEpoch(Integer.parseInt(f[3]))
                .setPreviousMemberEpoch(Integer.parseInt(f[4]))
                .setSubscribedTopicNames(names)
                .setAssignedPartitions(assigned.getOrDefault(f[1], Map.of()))
                .setPartitionsPendingRevocation(pending.getOrDefault(f[1], Map.of()))
                .build());
            memberTargets.add(new Assignment(targets.getOrDefault(f[1], Map.of())));
        }
        return new Case() {
            public String name() {
                return name;
            }

            ConsumerGroupMember step(int i) {
                return new CurrentAssignmentBuilder(members.get(i))
                    .withMetadataImage(image)
                    .withTargetAssignment(targetEpoch, memberTargets.get(i))
                    .withHasSubscriptionChanged(subscriptionChanged)
                    .withCurrentPartitionEpoch((t, p) -> owners.getOrDefault(t, Map.of()).getOrDefault(p, -1))
                    .build();
            }

            public int run() {
                int acc = 0;
                for (int i = 0; i < members.size(); i++) acc += step(i).memberEpoch();
                return acc;
            }

            public String render() {
                StringBuilder sb = new StringBuilder("reconcile ").append(name).append('\n');
                for (int i = 0; i < members.size(); i++) {
                    ConsumerGroupMember m;
                    try {
                        m = step(i);
                    } catch (Exception e) {
                        sb.append("member ").append(members.get(i).memberId()).append(" error ").append(e.getClass().getSimpleName()).append('\n');
                        continue;
                    }
                    sb.append("member ").append(m.memberId()).append(' ').append(m.state()).append(" epoch=").append(m.memberEpoch())
                        .append(" prev=").append(m.previousMemberEpoch()).append('\n');
                    renderEpochs(sb, "assigned", m.assignedPartitions());
                    renderEpochs(sb, "pending", m.partitionsPendingRevocation());
                }
                return sb.append("end\n").toString();
            }
        };
    }

    // ---- target cases ----
    //   target NAME Homogeneous|Heterogeneous
    //   topic NAME ID PARTITIONS
    //   subs S NAME,NAME,...
    //   member ID S
    //   owned MEMBER TOPIC P,P,...
    //   joiner ID S
    //   end

    static Case targetCase(List<String[]> lines) {
        String[] head = lines.get(0);
        String name = head[1];
        SubscriptionType type = head[2].equals("Homogeneous") ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        Map<String, List<String>> subs = new HashMap<>();
        Map<String, ConsumerGroupMember> members = new LinkedHashMap<>();
        Map<String, Map<Uuid, Set<Integer>>> owned = new HashMap<>();
        for (String[] f : lines) {
            switch (f[0]) {
                case "topic" -> replayTopic(delta, f);
                case "subs" -> subs.put(f[1], f[2].equals("-") ? List.of() : List.of(f[2].split(",")));
                case "member", "joiner" -> members.put(f[1], new ConsumerGroupMember.Builder(f[1])
                    .setSubscribedTopicNames(subs.get(f[2]))
                    .build());
                case "owned" -> owned.computeIfAbsent(f[1], k -> new HashMap<>()).put(Uuid.fromString(f[2]), new HashSet<>(ints(f[3])));
                default -> { }
            }
        }
        Map<String, Assignment> targets = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        owned.forEach((member, a) -> {
            targets.put(member, new Assignment(a));
            a.forEach((t, ps) -> ps.forEach(p -> inverted.computeIfAbsent(t, k -> new HashMap<>()).put(p, member)));
        });
        CoordinatorMetadataImage image = new KRaftCoordinatorMetadataImage(delta.apply(MetadataProvenance.EMPTY));
        TargetAssignmentBuilder.ConsumerTargetAssignmentBuilder builder =
            new TargetAssignmentBuilder.ConsumerTargetAssignmentBuilder("benchmark-group", 0, new UniformAssignor())
                .withTime(Time.SYSTEM)
                .withMembers(members)
                .withSubscriptionType(type)
                .withTargetAssignment(targets)
                .withInvertedTargetAssignment(inverted)
                .withMetadataImage(image);
        return new Case() {
            public String name() {
                return name;
            }

            public int run() {
                return builder.build().records().size();
            }

            public String render() {
                StringBuilder sb = new StringBuilder("target ").append(name).append('\n');
                TargetAssignmentBuilder.TargetAssignmentResult result;
                try {
                    result = builder.build();
                } catch (Exception e) {
                    return failed(sb, e);
                }
                appendMembers(sb, result.targetAssignment());
                TreeSet<String> changed = new TreeSet<>();
                for (CoordinatorRecord r : result.records()) {
                    if (r.key() instanceof ConsumerGroupTargetAssignmentMemberKey k) changed.add(k.memberId());
                }
                sb.append("records ").append(changed.isEmpty() ? "-" : String.join(",", changed)).append('\n');
                return sb.append("end\n").toString();
            }
        };
    }

    static void renderEpochs(StringBuilder sb, String what, Map<Uuid, Map<Integer, Integer>> a) {
        TreeMap<String, TreeMap<Integer, Integer>> sorted = new TreeMap<>();
        a.forEach((t, ps) -> {
            if (!ps.isEmpty()) sorted.put(t.toString(), new TreeMap<>(ps));
        });
        sorted.forEach((t, ps) -> {
            StringBuilder list = new StringBuilder();
            ps.forEach((p, e) -> list.append(list.length() == 0 ? "" : ",").append(p).append(':').append(e));
            sb.append("  ").append(what).append(' ').append(t).append(' ').append(list).append('\n');
        });
    }
}
