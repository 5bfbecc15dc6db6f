// The JVM side of groupquake's Java share member (clients/java, kind java-share): Kafka's own
// KafkaShareConsumer (KIP-932) with explicit acknowledgement (share.acknowledgement.mode=explicit).
//
// It reads commands on standard input and answers on standard output, one line each, fields separated
// by tabs; every command is answered by exactly one final line (ready, polled, acked, closed or err),
// which may follow record lines (rec) and acknowledgement-callback lines (cb):
//
//   hello BOOTSTRAP GROUP TOPICS CLIENTID   → ready KAFKA_CLIENTS_VERSION
//   poll MS                                 → rec TOPIC PARTITION OFFSET DELIVERY_COUNT BASE64_VALUE …,
//                                             polled N LOCK_MS (LOCK_MS -1 when the client gives none)
//   ack TYPE TOPIC:PARTITION:OFFSET,…       → acked N (acknowledge(record, type) of each, then
//                                             commitAsync: the acknowledgements leave in a
//                                             ShareAcknowledge at once)
//   close MS                                → closed (close(Duration): final acknowledgements at share
//                                             session epoch -1, then the leave)
//
// cb TOPIC PARTITION OFFSETS ERROR is what the AcknowledgementCommitCallback said of a batch of
// acknowledgements (ERROR "-" when none). groupquake does not take the outcome of an acknowledgement
// from it: BOOTSTRAP is the member's gateway (clients/process.Gateway), which reads every
// ShareGroupHeartbeat, ShareFetch and ShareAcknowledge on its way out and every answer on its way in,
// before this JVM can use it (clients/wiretap.ShareCalls).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class ShareDriver {
    private static PrintStream out;
    private static KafkaShareConsumer<byte[], byte[]> consumer;
    // The records of the last polls not acknowledged yet, by topic:partition:offset.
    private static final Map<String, ConsumerRecord<byte[], byte[]>> held = new HashMap<>();

    public static void main(String[] args) throws Exception {
        out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            try {
                if (handle(f)) {
                    break;
                }
            } catch (Throwable t) {
                say("err", (t.getClass().getName() + ": " + t.getMessage()).replace('\t', ' ').replace('\n', ' '));
            }
        }
        out.flush();
        System.exit(0);
    }

    private static boolean handle(String[] f) {
        switch (f[0]) {
            case "hello": {
                Properties p = new Properties();
                p.put("bootstrap.servers", f[1]);
                p.put("group.id", f[2]);
                p.put("client.id", f[4]);
                p.put("share.acknowledgement.mode", "explicit");
                p.put("key.deserializer", ByteArrayDeserializer.class.getName());
                p.put("value.deserializer", ByteArrayDeserializer.class.getName());
                consumer = new KafkaShareConsumer<>(p);
                consumer.setAcknowledgementCommitCallback(ShareDriver::committed);
                consumer.subscribe(Arrays.asList(f[3].split(",")));
                say("ready", clientsVersion());
                return false;
            }
            case "poll": {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(Long.parseLong(f[1])));
                int n = 0;
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    held.put(r.topic() + ":" + r.partition() + ":" + r.offset(), r);
                    byte[] v = r.value() == null ? new byte[0] : r.value();
                    say("rec", r.topic(), Integer.toString(r.partition()), Long.toString(r.offset()),
                        Short.toString(r.deliveryCount().orElse((short) -1)), Base64.getEncoder().encodeToString(v));
                    n++;
                }
                say("polled", Integer.toString(n), Integer.toString(consumer.acquisitionLockTimeoutMs().orElse(-1)));
                return false;
            }
            case "ack": {
                AcknowledgeType type = AcknowledgeType.forId(Byte.parseByte(f[1]));
                List<ConsumerRecord<byte[], byte[]>> recs = new ArrayList<>();
                for (String k : f[2].split(",")) {
                    ConsumerRecord<byte[], byte[]> r = held.get(k);
                    if (r == null) {
                        say("err", "record " + k + " is not held: never handed out, or already acknowledged");
                        return false;
                    }
                    recs.add(r);
                }
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    consumer.acknowledge(r, type);
                    if (type != AcknowledgeType.RENEW) {
                        held.remove(r.topic() + ":" + r.partition() + ":" + r.offset());
                    }
                }
                consumer.commitAsync();
                say("acked", Integer.toString(recs.size()));
                return false;
            }
            case "close": {
                consumer.close(Duration.ofMillis(Long.parseLong(f[1])));
                say("closed");
                return true;
            }
            default:
                say("err", "unknown command " + f[0]);
                return false;
        }
    }

    // committed is the AcknowledgementCommitCallback: it runs on this thread, inside poll, commitSync or
    // close, so its lines come before that command's final line.
    private static void committed(Map<TopicIdPartition, Set<Long>> offsets, Exception e) {
        String err = e == null ? "-" : (e.getClass().getSimpleName() + ": " + e.getMessage()).replace('\t', ' ').replace('\n', ' ');
        for (Map.Entry<TopicIdPartition, Set<Long>> en : offsets.entrySet()) {
            StringBuilder offs = new StringBuilder();
            for (Long o : en.getValue()) {
                if (offs.length() > 0) {
                    offs.append(',');
                }
                offs.append(o);
            }
            say("cb", en.getKey().topic(), Integer.toString(en.getKey().partition()), offs.toString(), err);
        }
    }

    // The kafka-clients version, from the properties file its jar carries (AppInfoParser moved between
    // releases).
    static String clientsVersion() {
        try (java.io.InputStream r = KafkaShareConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            p.load(r);
            return p.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    private static void say(String... f) {
        out.println(String.join("\t", f));
        out.flush();
    }
}
