// HashDriver runs Kafka's own metadata hash (KIP-1101:
// org.apache.kafka.coordinator.group.Utils.computeTopicHash and
// computeGroupHash, hash4j's streaming XXH3-64) over the cases of
// inputs.txt and prints each case followed by Kafka's values. The Go test
// TestMetadataHashKafkaGolden checks coordinator/consumergroup against them.
//
// Each case builds a real KRaft metadata image (MetadataDelta replaying
// RegisterBrokerRecord, TopicRecord and PartitionRecord), so the racks of a
// partition are looked up as the broker does: the rack of each replica's
// registered broker, brokers without a rack and unregistered replicas left
// out. computeTopicHash takes a MetadataImage in 4.1 and 4.2 and a
// CoordinatorMetadataImage from 4.3; both are found by reflection so one
// driver serves every release with the hash.
//
// Input lines (UTF-8), one case between "case NAME" and "end":
//   broker ID RACK|-          a registered broker, "-" for no rack
//   topic NAME ID-HEX PARTS   a topic, its id as 32 hex digits
//   replicas NAME P B1,B2,..  the replicas of partition P (default: none)
//   group T1 T2 ...           the group hash of these subscribed topics
// Output: the input lines, and before "end" one "topic-hash NAME VALUE" per
// topic and one "group-hash T1,T2,... VALUE" per group line, VALUE the
// signed 64-bit result as Java prints it.
//
// Usage: see regen.sh beside this file.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.coordinator.group.Utils;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;

public class HashDriver {
    static final class Topic {
        String name;
        Uuid id;
        int partitions;
        Map<Integer, int[]> replicas = new HashMap<>();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Map<Integer, String> brokers = new LinkedHashMap<>();
        Map<String, Topic> topics = new LinkedHashMap<>();
        List<String[]> groups = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split("\\s+");
            if (line.startsWith("#") || line.isBlank()) {
                out.println(line);
                continue;
            }
            switch (f[0]) {
                case "case":
                    brokers.clear();
                    topics.clear();
                    groups.clear();
                    break;
                case "broker":
                    brokers.put(Integer.parseInt(f[1]), f[2].equals("-") ? null : f[2]);
                    break;
                case "topic": {
                    Topic t = new Topic();
                    t.name = f[1];
                    t.id = new Uuid(Long.parseUnsignedLong(f[2].substring(0, 16), 16), Long.parseUnsignedLong(f[2].substring(16), 16));
                    t.partitions = Integer.parseInt(f[3]);
                    topics.put(t.name, t);
                    break;
                }
                case "replicas": {
                    String[] ids = f[3].split(",");
                    int[] r = new int[ids.length];
                    for (int i = 0; i < ids.length; i++) r[i] = Integer.parseInt(ids[i]);
                    topics.get(f[1]).replicas.put(Integer.parseInt(f[2]), r);
                    break;
                }
                case "group":
                    groups.add(Arrays.copyOfRange(f, 1, f.length));
                    break;
                case "end": {
                    MetadataImage image = image(brokers, topics);
                    for (Topic t : topics.values()) {
                        out.println("topic-hash " + t.name + " " + topicHash(t.name, image));
                    }
                    for (String[] g : groups) {
                        // ModernGroup.computeMetadataHash: only topics of the image count.
                        Map<String, Long> hashes = new HashMap<>();
                        for (String name : g) {
                            if (image.topics().getTopic(name) != null) hashes.put(name, topicHash(name, image));
                        }
                        out.println("group-hash " + String.join(",", g) + " " + Utils.computeGroupHash(hashes));
                    }
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown line: " + line);
            }
            out.println(line);
        }
    }

    static MetadataImage image(Map<Integer, String> brokers, Map<String, Topic> topics) {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        for (Map.Entry<Integer, String> b : brokers.entrySet()) {
            delta.replay(new RegisterBrokerRecord()
                .setBrokerId(b.getKey())
                .setIncarnationId(new Uuid(1, b.getKey() + 1))
                .setBrokerEpoch(1)
                .setRack(b.getValue())
                .setFenced(false));
        }
        for (Topic t : topics.values()) {
            delta.replay(new TopicRecord().setName(t.name).setTopicId(t.id));
            for (int p = 0; p < t.partitions; p++) {
                int[] r = t.replicas.getOrDefault(p, new int[0]);
                List<Integer> replicas = new ArrayList<>();
                List<Uuid> dirs = new ArrayList<>();
                for (int id : r) {
                    replicas.add(id);
                    dirs.add(Uuid.fromString("AAAAAAAAAAAAAAAAAAAAAA"));
                }
                delta.replay(new PartitionRecord()
                    .setTopicId(t.id)
                    .setPartitionId(p)
                    .setReplicas(replicas)
                    .setIsr(replicas)
                    .setDirectories(dirs)
                    .setLeader(r.length > 0 ? r[0] : -1)
                    .setLeaderEpoch(0)
                    .setPartitionEpoch(0));
            }
        }
        return delta.apply(MetadataProvenance.EMPTY);
    }

    // topicHash calls Utils.computeTopicHash(String, MetadataImage) (4.1,
    // 4.2) or Utils.computeTopicHash(String, CoordinatorMetadataImage) over a
    // KRaftCoordinatorMetadataImage (4.3+), whichever the jar has.
    static long topicHash(String name, MetadataImage image) throws Exception {
        for (Method m : Utils.class.getMethods()) {
            if (!m.getName().equals("computeTopicHash") || m.getParameterCount() != 2) continue;
            Class<?> arg = m.getParameterTypes()[1];
            if (arg.isInstance(image)) return (long) m.invoke(null, name, image);
            Class<?> kraft = Class.forName("org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage");
            Object wrapped = kraft.getConstructor(MetadataImage.class).newInstance(image);
            if (arg.isInstance(wrapped)) return (long) m.invoke(null, name, wrapped);
        }
        throw new IllegalStateException("no Utils.computeTopicHash(String, image) in this jar");
    }
}
