// The JVM side of groupquake's Java members (clients/java): a real KafkaConsumer that speaks groupquake's
// member protocol, version 1 (docs/member-protocol.md): newline-delimited JSON, one object a line.
//
// A JVM runs one member on its standard input and output, or, started with the environment variable
// GROUPQUAKE_MEMBER_SOCKET=PATH, hosts many: it listens on that Unix socket, every connection is one
// member speaking the same protocol, and the JVM exits when its standard input closes (the socket
// transport: --java-jvms shared).
//
// From groupquake: hello (versions, member, group, topics, bootstrap = the member's gateway,
// group_protocol, assignor, instance_id, timers, properties), subscribe, poll, commit, close (each with
// an id, answered in order by ready, subscribed, polled, committed, closed), ack (the answer to an
// ownership event), crash, and, in a hosting JVM, freeze and thaw.
// To groupquake: the answers; assigned, revoked and lost from the ConsumerRebalanceListener, each
// answered by ack before the listener returns (so the history has a revocation before the request that
// acknowledges it leaves); error. Every message from here carries "at", the JVM's wall clock in
// microseconds, and the consumer's group metadata (member_id, epoch: the generation or member epoch).
// The group requests themselves are read off the wire by groupquake's gateway: this driver reports
// none (ready says calls "wire").
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
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
    static final int VERSION = 1;
    private static final Map<String, Object> EOF = Map.of("type", "\u0000eof");
    private static final Map<String, Object> CRASH = Map.of("type", "\u0000crash");

    public static void main(String[] args) throws Exception {
        PrintStream stdout = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        // Anything the client library prints goes to stderr, never between our lines.
        System.setOut(System.err);
        String sock = System.getenv("GROUPQUAKE_MEMBER_SOCKET");
        if (sock != null && !sock.isEmpty()) {
            host(Path.of(sock));
            return;
        }
        Member m = new Member(System.in, stdout, false);
        m.run();
        System.exit(0);
    }

    /** The socket transport: one member a connection, until standard input closes. */
    private static void host(Path sock) throws Exception {
        Set<Member> members = ConcurrentHashMap.newKeySet();
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(sock));
        Thread acceptor = new Thread(() -> {
            while (true) {
                SocketChannel ch;
                try {
                    ch = server.accept();
                } catch (Exception e) {
                    return;
                }
                Member m = new Member(in(ch), new PrintStream(out(ch), false, StandardCharsets.UTF_8), true);
                m.onGone = () -> {
                    members.remove(m);
                    try {
                        ch.close();
                    } catch (Exception e) {
                        // gone already
                    }
                };
                members.add(m);
                Thread t = new Thread(m, "member");
                t.setDaemon(true);
                t.start();
            }
        }, "acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
        InputStream in = System.in;
        while (in.read() >= 0) {
            // standard input carries nothing; its end ends the JVM
        }
        server.close();
        for (Member m : members) {
            m.queue.add(EOF);
        }
        long end = System.currentTimeMillis() + 5000;
        while (!members.isEmpty() && System.currentTimeMillis() < end) {
            Thread.sleep(20);
        }
        System.exit(0);
    }

    /**
     * The channel's reading side. Not Channels.newInputStream: its streams of one channel share a lock, so a
     * blocked read would hold up every write.
     */
    private static InputStream in(SocketChannel ch) {
        return new InputStream() {
            @Override
            public int read() throws java.io.IOException {
                byte[] b = new byte[1];
                return read(b, 0, 1) < 0 ? -1 : b[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws java.io.IOException {
                return ch.read(java.nio.ByteBuffer.wrap(b, off, len));
            }
        };
    }

    /** The channel's writing side (see in). */
    private static OutputStream out(SocketChannel ch) {
        return new OutputStream() {
            @Override
            public void write(int b) throws java.io.IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws java.io.IOException {
                java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b, off, len);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
            }
        };
    }

    /** The kafka-clients version, from the properties file its jar carries (AppInfoParser moved between releases). */
    static String clientsVersion() {
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

    /** One KafkaConsumer, the thread that drives it, and the reader of its stream. */
    private static final class Member implements Runnable {
        private final InputStream rawIn;
        private final PrintStream out;
        private final boolean hosted;
        final BlockingQueue<Map<String, Object>> queue = new LinkedBlockingQueue<>();
        private final Object pause = new Object();
        private volatile boolean crashed, frozen;
        private volatile KafkaConsumer<byte[], byte[]> consumer;
        private long seq;
        private List<String> topics = new ArrayList<>();
        Runnable onGone = () -> { };

        Member(InputStream in, PrintStream out, boolean hosted) {
            this.rawIn = in;
            this.out = out;
            this.hosted = hosted;
        }

        /** Reads the stream: crash, freeze and thaw act at once; everything else waits in the queue. */
        private void read() {
            readMessages(rawIn, msg -> {
                switch (String.valueOf(msg.get("type"))) {
                    case "crash":
                        crash();
                        break;
                    case "freeze":
                        freeze(true);
                        break;
                    case "thaw":
                        freeze(false);
                        break;
                    default:
                        queue.add(msg);
                }
            }, why -> emit(ev("error").str("code", "bad_message").str("error", why)));
            queue.add(EOF);
        }

        void crash() {
            crashed = true;
            freeze(false);
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) {
                c.wakeup();
            }
            queue.add(CRASH);
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

        private Map<String, Object> take() {
            try {
                return queue.take();
            } catch (InterruptedException e) {
                return EOF;
            }
        }

        @Override
        public void run() {
            Thread reader = new Thread(this::read, "reader");
            reader.setDaemon(true);
            reader.start();
            try {
                serve();
            } finally {
                onGone.run();
            }
        }

        private void serve() {
            while (true) {
                Map<String, Object> msg = take();
                awaitThaw();
                if (crashed || msg == CRASH) {
                    abandon();
                    return;
                }
                if (msg == EOF) {
                    if (consumer != null) {
                        consumer.close(Duration.ZERO);
                    }
                    return;
                }
                String type = String.valueOf(msg.get("type"));
                long id = num(msg, "id", 0);
                if (consumer == null && !type.equals("hello") && !type.equals("ack")) {
                    emit(ev("error").num("id", id).str("code", "bad_message").str("error", type + " before hello"));
                    continue;
                }
                switch (type) {
                    case "hello":
                        if (!hello(msg, id)) {
                            return;
                        }
                        break;
                    case "subscribe":
                        subscribe(msg, id);
                        break;
                    case "poll":
                        poll(id, num(msg, "timeout_ms", 250));
                        break;
                    case "commit":
                        commit(msg, id);
                        break;
                    case "close":
                        close(id, num(msg, "timeout_ms", 10000));
                        return;
                    case "ack":
                        break; // an ack with nothing waiting: the listener gave up on it
                    default:
                        J e = ev("error").str("code", "unknown_message").str("error", "unknown message type " + type);
                        if (id != 0) {
                            e.num("id", id);
                        }
                        emit(e);
                }
            }
        }

        /** Builds the consumer from hello; false when it cannot (the member then ends). */
        private boolean hello(Map<String, Object> h, long id) {
            if (consumer != null) {
                emit(ev("error").num("id", id).str("code", "bad_message").str("error", "a second hello"));
                return true;
            }
            List<Object> versions = list(h, "versions");
            boolean speaks = false;
            for (Object v : versions) {
                speaks |= v instanceof Long && (Long) v == VERSION;
            }
            if (!speaks) {
                emit(ev("error").num("id", id).str("code", "unsupported_version").raw("fatal", "true")
                    .str("error", "this driver speaks member protocol version " + VERSION + ", hello offered " + versions));
                return false;
            }
            String protocol = str(h, "group_protocol", "classic");
            String assignor = str(h, "assignor", "");
            Properties props = new Properties();
            props.put("bootstrap.servers", String.join(",", strings(list(h, "bootstrap"))));
            props.put("group.id", str(h, "group", ""));
            props.put("client.id", "groupquake-" + str(h, "member", "member"));
            props.put("enable.auto.commit", "false");
            props.put("auto.offset.reset", "earliest");
            props.put("group.protocol", protocol);
            String iid = str(h, "instance_id", "");
            if (!iid.isEmpty()) {
                props.put("group.instance.id", iid);
            }
            Map<String, Object> timers = map(h, "timers");
            if (num(timers, "poll_interval_ms", 0) > 0) {
                props.put("max.poll.interval.ms", Long.toString(num(timers, "poll_interval_ms", 0)));
            }
            if (protocol.equals("consumer")) {
                props.put("group.remote.assignor", assignor.isEmpty() ? "uniform" : assignor);
            } else {
                String strategy = "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
                if (assignor.equals("cooperative-sticky")) {
                    strategy = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
                } else if (!assignor.isEmpty() && !assignor.equals("range")) {
                    emit(ev("error").num("id", id).str("code", "bad_config").raw("fatal", "true")
                        .str("error", "assignor " + assignor + " is not range or cooperative-sticky"));
                    return false;
                }
                props.put("partition.assignment.strategy", strategy);
                if (num(timers, "session_ms", 0) > 0) {
                    props.put("session.timeout.ms", Long.toString(num(timers, "session_ms", 0)));
                }
                if (num(timers, "heartbeat_ms", 0) > 0) {
                    props.put("heartbeat.interval.ms", Long.toString(num(timers, "heartbeat_ms", 0)));
                }
            }
            for (Map.Entry<String, Object> e : map(h, "properties").entrySet()) {
                props.put(e.getKey(), String.valueOf(e.getValue()));
            }
            props.put("key.deserializer", ByteArrayDeserializer.class.getName());
            props.put("value.deserializer", ByteArrayDeserializer.class.getName());
            topics = strings(list(h, "topics"));
            try {
                consumer = new KafkaConsumer<>(props);
            } catch (Exception e) {
                emit(ev("error").num("id", id).str("code", "bad_config").raw("fatal", "true").str("error", "creating the consumer: " + describe(e)));
                return false;
            }
            J r = ev("ready").num("id", id).num("version", VERSION).str("client", "kafka-clients " + clientsVersion())
                .str("calls", "wire").str("commits", "application");
            if (hosted) {
                r.raw("capabilities", "[\"freeze\"]");
            }
            emit(r);
            return true;
        }

        private void subscribe(Map<String, Object> msg, long id) {
            List<String> ts = strings(list(msg, "topics"));
            if (ts.isEmpty()) {
                ts = topics;
            }
            J e = ev("subscribed").num("id", id);
            try {
                consumer.subscribe(ts, new Listener());
            } catch (Exception ex) {
                e.str("error", describe(ex));
            }
            emit(e);
        }

        /** A crash: the links are cut already; the consumer goes with no time given and no word said. */
        private void abandon() {
            try {
                if (consumer != null) {
                    consumer.close(Duration.ZERO);
                }
            } catch (Exception e) {
                // a crashed member reports nothing
            }
        }

        private void poll(long id, long ms) {
            J e;
            try {
                ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(ms));
                e = meta(ev("polled").num("id", id));
                StringBuilder b = new StringBuilder("[");
                Base64.Encoder b64 = Base64.getEncoder();
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                    if (b.length() > 1) {
                        b.append(',');
                    }
                    b.append("{\"topic\":").append(J.quote(r.topic())).append(",\"partition\":").append(r.partition())
                        .append(",\"offset\":").append(r.offset());
                    if (r.key() != null) {
                        b.append(",\"key\":").append(J.quote(b64.encodeToString(r.key())));
                    }
                    if (r.value() != null) {
                        b.append(",\"value\":").append(J.quote(b64.encodeToString(r.value())));
                    }
                    b.append('}');
                }
                e.raw("records", b.append(']').toString());
            } catch (Crashed c) {
                throw c;
            } catch (Exception ex) {
                e = meta(ev("polled").num("id", id)).str("error", describe(ex)).str("class", ex.getClass().getSimpleName());
                if (endsThePollLoop(ex)) {
                    e.raw("fatal", "true");
                }
            }
            emit(e);
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

        private void commit(Map<String, Object> msg, long id) {
            Map<TopicPartition, OffsetAndMetadata> offs = new HashMap<>();
            for (Object o : list(msg, "offsets")) {
                @SuppressWarnings("unchecked")
                Map<String, Object> m = (Map<String, Object>) o;
                offs.put(new TopicPartition(str(m, "topic", ""), (int) num(m, "partition", 0)), new OffsetAndMetadata(num(m, "offset", 0)));
            }
            J e;
            try {
                consumer.commitSync(offs, Duration.ofMillis(num(msg, "timeout_ms", 15000)));
                e = meta(ev("committed").num("id", id));
            } catch (Crashed c) {
                throw c;
            } catch (Exception ex) {
                e = meta(ev("committed").num("id", id)).str("error", describe(ex)).str("class", ex.getClass().getSimpleName());
            }
            emit(e);
        }

        private void close(long id, long ms) {
            J e = ev("closed").num("id", id);
            try {
                consumer.close(Duration.ofMillis(ms));
            } catch (Crashed c) {
                return;
            } catch (Exception ex) {
                e.str("error", describe(ex));
            }
            emit(e);
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

        /** Reports a listener call and waits for groupquake's ack before the listener returns. */
        private void ownership(String kind, Collection<TopicPartition> ps) {
            awaitThaw();
            if (crashed) {
                throw new Crashed(); // a crashed member's listener does nothing more
            }
            if (ps.isEmpty()) {
                return;
            }
            StringBuilder b = new StringBuilder("[");
            for (TopicPartition tp : ps) {
                if (b.length() > 1) {
                    b.append(',');
                }
                b.append("{\"topic\":").append(J.quote(tp.topic())).append(",\"partition\":").append(tp.partition()).append('}');
            }
            long s = ++seq;
            emit(meta(ev(kind)).num("seq", s).raw("partitions", b.append(']').toString()));
            while (true) {
                Map<String, Object> m = take();
                if (m == CRASH || crashed) {
                    throw new Crashed();
                }
                if (m == EOF) {
                    queue.add(EOF);
                    throw new Crashed(); // groupquake went away
                }
                if ("ack".equals(m.get("type")) && num(m, "seq", -1) == s) {
                    awaitThaw();
                    if (crashed) {
                        throw new Crashed();
                    }
                    return;
                }
                System.err.println("member: expected the ack of event " + s + ", got: " + m);
            }
        }

        private J meta(J e) {
            try {
                ConsumerGroupMetadata m = consumer.groupMetadata();
                e.str("member_id", m.memberId()).num("epoch", m.generationId());
            } catch (Exception ex) {
                e.str("meta_error", describe(ex));
            }
            return e;
        }

        private J ev(String type) {
            Instant now = Instant.now();
            return new J().str("type", type).num("at", now.getEpochSecond() * 1_000_000L + now.getNano() / 1000);
        }

        /** Writes e, unless the member was crashed. */
        private void emit(J e) {
            if (crashed) {
                return;
            }
            String line = e.done();
            synchronized (out) {
                out.println(line);
                out.flush();
            }
        }
    }

    static String describe(Throwable t) {
        StringBuilder b = new StringBuilder(t.getClass().getName() + ": " + t.getMessage());
        for (Throwable c = t.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
            b.append(" (caused by ").append(c.getClass().getName()).append(": ").append(c.getMessage()).append(')');
        }
        return b.toString();
    }

    /**
     * Reads the harness's lines from in until the stream ends or breaks
     * (a broken stream counts as its end): blank lines are skipped, each JSON
     * object goes to handle, and any other line to bad, as what is wrong with it.
     */
    static void readMessages(InputStream in, java.util.function.Consumer<Map<String, Object>> handle, java.util.function.Consumer<String> bad) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isBlank()) {
                    continue;
                }
                Map<String, Object> msg;
                try {
                    msg = Json.object(line);
                } catch (Exception e) {
                    bad.accept("a line that is not a JSON object: " + e.getMessage());
                    continue;
                }
                handle.accept(msg);
            }
        } catch (Exception e) {
            // the stream broke: as its end
        }
    }

    static long num(Map<String, Object> m, String k, long def) {
        Object v = m.get(k);
        return v instanceof Number ? ((Number) v).longValue() : def;
    }

    static String str(Map<String, Object> m, String k, String def) {
        Object v = m.get(k);
        return v instanceof String ? (String) v : def;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof List ? (List<Object>) v : List.of();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Map ? (Map<String, Object>) v : Map.of();
    }

    static List<String> strings(List<Object> l) {
        List<String> out = new ArrayList<>();
        for (Object o : l) {
            out.add(String.valueOf(o));
        }
        return out;
    }

    /** A JSON object built in order. */
    static final class J {
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

    /** A small JSON reader: objects (in order), arrays, strings, numbers (Long, else Double), booleans, null. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String s) {
            Json j = new Json(s);
            Object v = j.value();
            j.ws();
            if (j.i != s.length()) {
                throw new IllegalArgumentException("trailing characters at " + j.i);
            }
            return v;
        }

        /** Parses a line that must hold one JSON object (a message of the harness). */
        @SuppressWarnings("unchecked")
        static Map<String, Object> object(String line) {
            Object o = parse(line);
            if (!(o instanceof Map)) {
                throw new IllegalArgumentException("not a JSON object");
            }
            return (Map<String, Object>) o;
        }

        private void ws() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }

        private Object value() {
            ws();
            if (i >= s.length()) {
                throw new IllegalArgumentException("unexpected end");
            }
            char c = s.charAt(i);
            switch (c) {
                case '{': {
                    i++;
                    Map<String, Object> m = new LinkedHashMap<>();
                    ws();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        ws();
                        String k = string();
                        ws();
                        expect(':');
                        m.put(k, value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect('}');
                        return m;
                    }
                }
                case '[': {
                    i++;
                    List<Object> l = new ArrayList<>();
                    ws();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        l.add(value());
                        ws();
                        if (s.charAt(i) == ',') {
                            i++;
                            continue;
                        }
                        expect(']');
                        return l;
                    }
                }
                case '"':
                    return string();
                case 't':
                    word("true");
                    return Boolean.TRUE;
                case 'f':
                    word("false");
                    return Boolean.FALSE;
                case 'n':
                    word("null");
                    return null;
                default: {
                    int start = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                        i++;
                    }
                    String n = s.substring(start, i);
                    if (n.isEmpty()) {
                        throw new IllegalArgumentException("unexpected '" + c + "' at " + start);
                    }
                    if (n.contains(".") || n.contains("e") || n.contains("E")) {
                        return Double.parseDouble(n);
                    }
                    return Long.parseLong(n);
                }
            }
        }

        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) {
                throw new IllegalArgumentException("expected '" + c + "' at " + i);
            }
            i++;
        }

        private void word(String w) {
            if (!s.startsWith(w, i)) {
                throw new IllegalArgumentException("expected " + w + " at " + i);
            }
            i += w.length();
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': b.append('\n'); break;
                    case 't': b.append('\t'); break;
                    case 'r': b.append('\r'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'u':
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                        break;
                    default:
                        b.append(e);
                }
            }
        }
    }
}
