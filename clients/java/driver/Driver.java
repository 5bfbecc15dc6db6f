// The JVM side of groupquake's Java members (clients/java): one real
// KafkaConsumer per JVM, driven over stdin/stdout in lines.
//
// Commands (one a line, from groupquake):
//   poll MS            consumer.poll(MS ms); answers "polled" with the records
//   commit MS T P O... consumer.commitSync(offsets, MS ms) for (topic, partition, next offset)
//                      triples; answers "committed" with the exception, if any
//   close MS           consumer.close(MS ms) (leaves the group); answers "closed", then the JVM exits
//   ack                the answer to an event sent with "sync": the rebalance listener waits for it,
//                      so groupquake has written the event before the consumer goes on (a revocation
//                      is in the history before the request that acknowledges it leaves)
// Events (one JSON object a line, to groupquake): ready, assigned, revoked, lost, polled,
// committed, error, closed. Each carries "at", the JVM's wall clock in microseconds when it
// happened, and the consumer's group metadata (member id, generation or member epoch) then.
//
// The consumer's configuration comes as arguments key=value; "topics=a,b" is the subscription.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class Driver {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    private static BufferedReader in;
    private static KafkaConsumer<byte[], byte[]> consumer;

    public static void main(String[] args) throws Exception {
        // Anything the client library prints goes to stderr, never between our lines.
        System.setOut(System.err);
        in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Properties props = new Properties();
        List<String> topics = new ArrayList<>();
        for (String a : args) {
            int i = a.indexOf('=');
            if (i <= 0) {
                fatal("argument " + a + " is not key=value");
            }
            String k = a.substring(0, i), v = a.substring(i + 1);
            if (k.equals("topics")) {
                topics.addAll(Arrays.asList(v.split(",")));
            } else {
                props.put(k, v);
            }
        }
        props.put("key.deserializer", ByteArrayDeserializer.class.getName());
        props.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try {
            consumer = new KafkaConsumer<>(props);
            consumer.subscribe(topics, new Listener());
        } catch (Exception e) {
            fatal("creating the consumer: " + describe(e));
        }
        emit(ev("ready").str("version", clientsVersion()), false);
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "poll":
                    poll(Long.parseLong(f[1]));
                    break;
                case "commit":
                    commit(f);
                    break;
                case "close":
                    close(Long.parseLong(f[1]));
                    return;
                case "ack":
                    break; // an ack with nothing waiting: the listener gave up on it
                default:
                    emit(ev("error").str("error", "unknown command " + f[0]), false);
            }
        }
        // groupquake went away: leave no consumer behind.
        consumer.close(Duration.ZERO);
    }

    /** The kafka-clients version, from the properties file its jar carries (AppInfoParser moved between releases). */
    private static String clientsVersion() {
        try (java.io.InputStream r = KafkaConsumer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            Properties p = new Properties();
            p.load(r);
            return p.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    private static void poll(long ms) {
        J e;
        try {
            ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(ms));
            e = meta(ev("polled"));
            StringBuilder b = new StringBuilder("[");
            boolean first = true;
            Base64.Encoder b64 = Base64.getEncoder();
            for (ConsumerRecord<byte[], byte[]> r : recs) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append('[').append(J.quote(r.topic())).append(',').append(r.partition()).append(',').append(r.offset()).append(',')
                    .append(J.quote(r.key() == null ? "" : b64.encodeToString(r.key()))).append(',')
                    .append(J.quote(r.value() == null ? "" : b64.encodeToString(r.value()))).append(']');
            }
            e.raw("records", b.append(']').toString());
        } catch (Exception ex) {
            e = meta(ev("polled")).str("error", describe(ex)).str("class", ex.getClass().getSimpleName());
        }
        emit(e, false);
    }

    private static void commit(String[] f) {
        Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
        long timeout = Long.parseLong(f[1]);
        for (int i = 2; i + 2 < f.length; i += 3) {
            offs.put(new TopicPartition(f[i], Integer.parseInt(f[i + 1])), new OffsetAndMetadata(Long.parseLong(f[i + 2])));
        }
        J e;
        try {
            consumer.commitSync(offs, Duration.ofMillis(timeout));
            e = meta(ev("committed"));
        } catch (Exception ex) {
            e = meta(ev("committed")).str("error", describe(ex)).str("class", ex.getClass().getSimpleName());
        }
        emit(e, false);
    }

    private static void close(long ms) {
        J e = ev("closed");
        try {
            consumer.close(Duration.ofMillis(ms));
        } catch (Exception ex) {
            e.str("error", describe(ex));
        }
        emit(e, false);
        OUT.flush();
    }

    private static final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> ps) {
            ownership("revoked", ps);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> ps) {
            ownership("assigned", ps);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> ps) {
            // Overridden: the interface's default calls onPartitionsRevoked, and a loss is no clean hand-off.
            ownership("lost", ps);
        }
    }

    private static void ownership(String kind, Collection<TopicPartition> ps) {
        if (ps.isEmpty()) {
            return;
        }
        StringBuilder b = new StringBuilder("[");
        boolean first = true;
        for (TopicPartition tp : ps) {
            if (!first) {
                b.append(',');
            }
            first = false;
            b.append('[').append(J.quote(tp.topic())).append(',').append(tp.partition()).append(']');
        }
        emit(meta(ev(kind)).raw("partitions", b.append(']').toString()), true);
    }

    private static J meta(J e) {
        try {
            ConsumerGroupMetadata m = consumer.groupMetadata();
            e.str("member_id", m.memberId()).num("generation", m.generationId());
            m.groupInstanceId().ifPresent(id -> e.str("instance_id", id));
        } catch (Exception ex) {
            e.str("meta_error", describe(ex));
        }
        return e;
    }

    private static J ev(String kind) {
        Instant now = Instant.now();
        return new J().str("ev", kind).num("at", now.getEpochSecond() * 1_000_000L + now.getNano() / 1000);
    }

    /** Writes e; with sync, waits for groupquake's "ack" before returning. */
    private static void emit(J e, boolean sync) {
        if (sync) {
            e.raw("sync", "true");
        }
        OUT.println(e.done());
        OUT.flush();
        if (!sync) {
            return;
        }
        try {
            String line = in.readLine();
            if (line == null) {
                System.exit(3); // groupquake went away
            }
            if (!line.trim().equals("ack")) {
                System.err.println("expected ack, got: " + line);
                System.exit(4);
            }
        } catch (java.io.IOException ex) {
            System.exit(3);
        }
    }

    private static void fatal(String msg) {
        emit(ev("error").str("error", msg).raw("fatal", "true"), false);
        System.exit(2);
    }

    private static String describe(Throwable t) {
        StringBuilder b = new StringBuilder(t.getClass().getName() + ": " + t.getMessage());
        for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            b.append(" (caused by ").append(c.getClass().getName()).append(": ").append(c.getMessage()).append(')');
        }
        return b.toString();
    }

    /** A JSON object built in order. */
    private static final class J {
        private final StringBuilder b = new StringBuilder("{");

        J str(String k, String v) {
            return raw(k, quote(v));
        }

        J num(String k, long v) {
            return raw(k, Long.toString(v));
        }

        J raw(String k, String v) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append(quote(k)).append(':').append(v);
            return this;
        }

        String done() {
            return b.toString() + "}";
        }

        static String quote(String s) {
            if (s == null) {
                return "null";
            }
            StringBuilder o = new StringBuilder("\"");
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': o.append("\\\""); break;
                    case '\\': o.append("\\\\"); break;
                    case '\n': o.append("\\n"); break;
                    case '\r': o.append("\\r"); break;
                    case '\t': o.append("\\t"); break;
                    default:
                        if (c < 0x20) {
                            o.append(String.format("\\u%04x", (int) c));
                        } else {
                            o.append(c);
                        }
                }
            }
            return o.append('"').toString();
        }
    }
}
