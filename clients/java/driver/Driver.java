// The JVM side of groupquake's Java members (clients/java): real
// KafkaConsumers driven over stdin/stdout in lines. A JVM runs one member
// (the consumer's configuration as arguments key=value, "topics=a,b" the
// subscription), or, started with the single argument --host, many: every
// line to and from the JVM then names its member (below).
//
// Commands (one a line, from groupquake):
//   poll MS            consumer.poll(MS ms); answers "polled" with the records, or with the exception poll
//                      threw, marked "fatal" when the application cannot go on from it (endsThePollLoop):
//                      groupquake then polls no more, closes the consumer and reports the member stopped
//   commit MS T P O... consumer.commitSync(offsets, MS ms) for (topic, partition, next offset)
//                      triples; answers "committed" with the exception, if any
//   close MS           consumer.close(MS ms) (leaves the group); answers "closed", then the member
//                      ends (a JVM of one member exits)
//   ack                the answer to an event sent with "sync": the rebalance listener waits for it,
//                      so groupquake has written the event before the consumer goes on (a revocation
//                      is in the history before the request that acknowledges it leaves)
// Events (one JSON object a line, to groupquake): ready, assigned, revoked, lost, polled,
// committed, error, closed. Each carries "at", the JVM's wall clock in microseconds when it
// happened, and the consumer's group metadata (member id, generation or member epoch) then.
//
// A hosting JVM (--host) reads "ID COMMAND" lines, where ID names a member (one incarnation; no
// spaces), and writes every event of that member with "id":ID. Besides the commands above:
//   ID new K=V...      creates member ID with that configuration, in a thread of its own
//   ID crash           abandons the member as a crash would: groupquake has cut its links for good
//                      first, so nothing it sends after reaches a broker; its thread is woken
//                      (consumer.wakeup), its listener gives up waiting, and the consumer is closed
//                      with no time to spare (close(Duration.ZERO)), emitting nothing more
//   ID freeze, ID thaw stop the member's thread between commands (and in its rebalance listener)
//                      until thawed; groupquake holds its links meanwhile
// A member that ends (closed, crashed, or failed to start) writes "gone" last. The JVM exits when
// its standard input closes, closing every consumer it still hosts.
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
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class Driver {
    private static final PrintStream OUT = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
    private static final String EOF = "\u0000eof";
    private static final String CRASH = "\u0000crash";

    public static void main(String[] args) throws Exception {
        // Anything the client library prints goes to stderr, never between our lines.
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (args.length == 1 && args[0].equals("--host")) {
            host(in);
            return;
        }
        Member m = new Member(null, args);
        Thread t = new Thread(m, "member");
        t.start();
        String line;
        while ((line = in.readLine()) != null) {
            m.deliver(line);
        }
        // groupquake went away: leave no consumer behind.
        m.deliver(EOF);
        t.join();
        System.exit(0);
    }

    /** Runs the members groupquake names, each in its own thread, until stdin closes. */
    private static void host(BufferedReader in) throws Exception {
        Map<String, Member> members = new ConcurrentHashMap<>();
        List<Thread> threads = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            int sp = line.indexOf(' ');
            if (sp <= 0) {
                continue;
            }
            String id = line.substring(0, sp), cmd = line.substring(sp + 1).trim();
            if (cmd.startsWith("new ")) {
                Member m = new Member(id, cmd.substring(4).trim().split(" "));
                m.onGone = () -> members.remove(id, m);
                members.put(id, m);
                Thread t = new Thread(m, "member-" + id);
                t.setDaemon(true);
                threads.add(t);
                t.start();
                continue;
            }
            Member m = members.get(id);
            if (m == null) {
                continue; // gone already (a crash after a close, an ack after a crash)
            }
            switch (cmd) {
                case "crash":
                    m.crash();
                    break;
                case "freeze":
                    m.freeze(true);
                    break;
                case "thaw":
                    m.freeze(false);
                    break;
                default:
                    m.deliver(cmd);
            }
        }
        for (Member m : members.values()) {
            m.deliver(EOF);
        }
        for (Thread t : threads) {
            t.join(5000);
        }
        System.exit(0);
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

    /** Thrown inside the consumer's calls (from the listener) when the member is crashed. */
    private static final class Crashed extends RuntimeException {
        Crashed() {
            super("crashed", null, false, false);
        }
    }

    /** One KafkaConsumer and the thread that drives it. */
    private static final class Member implements Runnable {
        private final String id; // null: the JVM's only member
        private final String[] args;
        private final BlockingQueue<String> in = new LinkedBlockingQueue<>();
        private final Object pause = new Object();
        private volatile boolean crashed, frozen;
        private volatile KafkaConsumer<byte[], byte[]> consumer;
        Runnable onGone = () -> { };

        Member(String id, String[] args) {
            this.id = id;
            this.args = args;
        }

        void deliver(String line) {
            in.add(line);
        }

        void crash() {
            crashed = true;
            freeze(false);
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) {
                c.wakeup();
            }
            in.add(CRASH);
        }

        void freeze(boolean on) {
            synchronized (pause) {
                frozen = on;
                pause.notifyAll();
            }
        }

        private void awaitThaw() {
            synchronized (pause) {
                while (frozen && !crashed) {
                    try {
                        pause.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }

        private String take() {
            try {
                return in.take();
            } catch (InterruptedException e) {
                return EOF;
            }
        }

        @Override
        public void run() {
            try {
                serve();
            } finally {
                if (id != null) {
                    onGone.run();
                    emit(ev("gone"), false, true);
                }
            }
        }

        private void serve() {
            Properties props = new Properties();
            List<String> topics = new ArrayList<>();
            for (String a : args) {
                int i = a.indexOf('=');
                if (i <= 0) {
                    fatal("argument " + a + " is not key=value");
                    return;
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
                return;
            }
            emit(ev("ready").str("version", clientsVersion()), false);
            while (true) {
                String line = take();
                awaitThaw();
                if (crashed || line.equals(CRASH)) {
                    abandon();
                    return;
                }
                if (line.equals(EOF)) {
                    consumer.close(Duration.ZERO);
                    return;
                }
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
                        if (id == null) {
                            System.exit(0);
                        }
                        return;
                    case "ack":
                        break; // an ack with nothing waiting: the listener gave up on it
                    default:
                        emit(ev("error").str("error", "unknown command " + f[0]), false);
                }
            }
        }

        /** A crash: the links are cut already; the consumer goes with no time given and no word said. */
        private void abandon() {
            try {
                consumer.close(Duration.ZERO);
            } catch (Exception e) {
                // a crashed member reports nothing
            }
        }

        private void poll(long ms) {
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
                if (endsThePollLoop(ex)) {
                    e.raw("fatal", "true");
                }
            }
            emit(e, false);
        }

        /**
         * Whether an exception from poll ends the application: KafkaConsumer.poll documents every exception it
         * throws as one the consumer cannot go on from (UnreleasedInstanceIdException, FencedInstanceIdException,
         * GroupIdNotFoundException, GroupAuthorizationException, "any other unrecoverable errors"), so the
         * application closes the consumer and exits, and its supervisor starts it again. A RetriableException
         * it logs and polls again; a wakeup or an interrupt is one it asked for.
         */
        private static boolean endsThePollLoop(Exception ex) {
            return !(ex instanceof RetriableException) && !(ex instanceof WakeupException) && !(ex instanceof InterruptException);
        }

        private void commit(String[] f) {
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

        private void close(long ms) {
            J e = ev("closed");
            try {
                consumer.close(Duration.ofMillis(ms));
            } catch (Exception ex) {
                e.str("error", describe(ex));
            }
            emit(e, false);
        }

        private final class Listener implements ConsumerRebalanceListener {
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

        private void ownership(String kind, Collection<TopicPartition> ps) {
            awaitThaw();
            if (crashed) {
                throw new Crashed(); // a crashed member's listener does nothing more
            }
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

        private J meta(J e) {
            try {
                ConsumerGroupMetadata m = consumer.groupMetadata();
                e.str("member_id", m.memberId()).num("generation", m.generationId());
                m.groupInstanceId().ifPresent(iid -> e.str("instance_id", iid));
            } catch (Exception ex) {
                e.str("meta_error", describe(ex));
            }
            return e;
        }

        private J ev(String kind) {
            Instant now = Instant.now();
            J e = new J();
            if (id != null) {
                e.str("id", id);
            }
            return e.str("ev", kind).num("at", now.getEpochSecond() * 1_000_000L + now.getNano() / 1000);
        }

        private void emit(J e, boolean sync) {
            emit(e, sync, false);
        }

        /** Writes e (nothing once crashed, but "gone"); with sync, waits for groupquake's "ack" before returning. */
        private void emit(J e, boolean sync, boolean always) {
            if (crashed && !always) {
                return;
            }
            if (sync) {
                e.raw("sync", "true");
            }
            String line = e.done();
            synchronized (OUT) {
                OUT.println(line);
                OUT.flush();
            }
            if (!sync) {
                return;
            }
            String ack = take();
            if (ack.equals(CRASH)) {
                throw new Crashed();
            }
            if (ack.equals(EOF)) {
                if (id == null) {
                    System.exit(3); // groupquake went away
                }
                in.add(EOF);
                throw new Crashed();
            }
            if (!ack.trim().equals("ack")) {
                System.err.println("member " + id + ": expected ack, got: " + ack);
                if (id == null) {
                    System.exit(4);
                }
            }
        }

        private void fatal(String msg) {
            emit(ev("error").str("error", msg).raw("fatal", "true"), false);
            if (id == null) {
                System.exit(2);
            }
        }
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
