// groupquake's Spring Kafka member: a ConcurrentMessageListenerContainer (concurrency 1) with Spring's
// defaults for commits and errors (AckMode BATCH, synchronous commits, DefaultErrorHandler), speaking
// groupquake's member protocol, version 1 (docs/member-protocol.md) on standard input and output. The
// member kinds spring-kafka (classic protocol) and spring-kafka-consumer (KIP-848) run it, one JVM per
// member; `groupquake member-check --impl spring-kafka` checks it. It is compiled against the Java
// driver's classes (Driver.java: its JSON helpers) and the resolved spring-kafka and kafka-clients.
//
// A framework polls on its own thread and hands records to the application's listener, so the
// protocol's commands map onto the container like this:
//   - subscribe starts the container; its consumer thread joins the group and polls by itself.
//   - The listener (a record listener, as a @KafkaListener method taking one record) hands each record
//     to the harness and returns only once a poll command has reported it in polled: what the listener
//     was given is exactly what the application consumed, and the container commits it (AckMode BATCH:
//     after the listener has returned for every record of a poll) only after the harness saw it. A
//     harness that stops polling is an application stuck in its listener.
//   - The rebalance listener reports assigned, revoked (after Spring's commit on revocation: the
//     callback returns once the harness acknowledged it) and lost, from the container's thread.
//   - Its commits are its own (ready: commits "own"): the gateway reads them off the wire, and a
//     wrapper of the consumer reports each one's offsets and outcome as own-commit.
//   - A container that stops by itself (fenced, an authorization error: Spring's ConsumerStoppedEvent
//     with a reason other than NORMAL) is reported as stopped; the next poll answers fatal.
//   - close stops the container (its consumer leaves the group, calling the rebalance listener on the
//     way); a record handed to the listener while the container stops is refused (the listener throws,
//     so DefaultErrorHandler seeks back and the record's offset is not committed).
//   - crash and the end of standard input halt the JVM at once.
import java.io.PrintStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.event.ConsumerFailedToStartEvent;
import org.springframework.kafka.event.ConsumerStoppedEvent;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ConsumerAwareMessageListener;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;
import org.springframework.kafka.listener.ContainerProperties;

public final class SpringMember {
    static final int VERSION = 1;
    private static final Object EOF = new Object();

    private static PrintStream out;
    private static final BlockingQueue<Object> commands = new LinkedBlockingQueue<>();
    private static final BlockingQueue<Object> acks = new LinkedBlockingQueue<>();
    /** Records the listener hands over, each waiting for a poll to report it. */
    private static final BlockingQueue<Handoff> offered = new LinkedBlockingQueue<>();

    private static Map<String, Object> hello;
    private static Map<String, Object> props;
    private static ConcurrentMessageListenerContainer<byte[], byte[]> container;
    private static volatile boolean closing;
    private static volatile String stoppedWhy;
    private static volatile String lastMemberId = "";
    private static volatile long lastEpoch = -1;
    private static long seq;

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // a library's prints never go between our lines
        Thread reader = new Thread(SpringMember::read, "reader");
        reader.setDaemon(true);
        reader.start();
        serve();
    }

    /** Reads the harness's lines: crash halts at once, acks go to the callback waiting, the rest are commands. */
    private static void read() {
        Driver.readMessages(System.in, msg -> {
            switch (String.valueOf(msg.get("type"))) {
                case "crash":
                    // No leave, no word: the OS closes the connections (the harness cut the links first).
                    Runtime.getRuntime().halt(0);
                    break;
                case "ack":
                    acks.add(Driver.num(msg, "seq", -1));
                    break;
                case "freeze":
                case "thaw":
                    break; // a process of its own is stopped with SIGSTOP instead
                default:
                    commands.add(msg);
            }
        }, why -> emit(ev("error").str("code", "bad_message").str("error", why)));
        commands.add(EOF);
        acks.add(EOF);
    }

    private static void serve() throws Exception {
        while (true) {
            Object o = commands.take();
            if (o == EOF) {
                Runtime.getRuntime().halt(0); // standard input closed: end without waiting
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> msg = (Map<String, Object>) o;
            String type = String.valueOf(msg.get("type"));
            long id = Driver.num(msg, "id", 0);
            if (hello == null && !type.equals("hello") && List.of("subscribe", "poll", "commit", "close").contains(type)) {
                emit(ev("error").num("id", id).str("code", "bad_message").str("error", type + " before hello"));
                continue;
            }
            switch (type) {
                case "hello":
                    hello(msg, id);
                    break;
                case "subscribe":
                    subscribe(msg, id);
                    break;
                case "poll":
                    poll(id, Driver.num(msg, "timeout_ms", 250));
                    break;
                case "commit":
                    // Never sent to a client whose ready says commits "own".
                    emit(ev("committed").num("id", id).str("error", "this member commits on its own (Spring's AckMode BATCH)"));
                    break;
                case "close":
                    close(id, Driver.num(msg, "timeout_ms", 10000));
                    return;
                default:
                    Driver.J e = ev("error").str("code", "unknown_message").str("error", "unknown message type " + type);
                    if (id != 0) {
                        e.num("id", id);
                    }
                    emit(e);
            }
        }
    }

    private static void fatal(long id, String code, String text) {
        emit(ev("error").num("id", id).str("code", code).raw("fatal", "true").str("error", text));
        out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static void hello(Map<String, Object> h, long id) {
        if (hello != null) {
            emit(ev("error").num("id", id).str("code", "bad_message").str("error", "a second hello"));
            return;
        }
        boolean speaks = false;
        for (Object v : Driver.list(h, "versions")) {
            speaks |= v instanceof Long && (Long) v == VERSION;
        }
        if (!speaks) {
            fatal(id, "unsupported_version", "this member speaks member protocol version " + VERSION + ", hello offered " + Driver.list(h, "versions"));
        }
        String protocol = Driver.str(h, "group_protocol", "classic");
        String assignor = Driver.str(h, "assignor", "");
        Map<String, Object> p = new HashMap<>();
        p.put("bootstrap.servers", String.join(",", Driver.strings(Driver.list(h, "bootstrap"))));
        p.put("group.id", Driver.str(h, "group", ""));
        p.put("client.id", "groupquake-" + Driver.str(h, "member", "member"));
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("group.protocol", protocol);
        String iid = Driver.str(h, "instance_id", "");
        if (!iid.isEmpty()) {
            p.put("group.instance.id", iid);
        }
        Map<String, Object> timers = Driver.map(h, "timers");
        long pollMs = Driver.num(timers, "poll_interval_ms", 0);
        if (pollMs <= 0) {
            pollMs = Driver.num(timers, "rebalance_ms", 0); // the classic protocol's rebalance timeout is max.poll.interval.ms
        }
        if (pollMs > 0) {
            p.put("max.poll.interval.ms", Long.toString(pollMs));
        }
        if (protocol.equals("consumer")) {
            p.put("group.remote.assignor", assignor.isEmpty() ? "uniform" : assignor);
        } else {
            String strategy = "org.apache.kafka.clients.consumer.RangeAssignor,org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            if (assignor.equals("cooperative-sticky")) {
                strategy = "org.apache.kafka.clients.consumer.CooperativeStickyAssignor";
            } else if (!assignor.isEmpty() && !assignor.equals("range")) {
                fatal(id, "bad_config", "assignor " + assignor + " is not range or cooperative-sticky");
            }
            p.put("partition.assignment.strategy", strategy);
            if (Driver.num(timers, "session_ms", 0) > 0) {
                p.put("session.timeout.ms", Long.toString(Driver.num(timers, "session_ms", 0)));
            }
            if (Driver.num(timers, "heartbeat_ms", 0) > 0) {
                p.put("heartbeat.interval.ms", Long.toString(Driver.num(timers, "heartbeat_ms", 0)));
            }
        }
        for (Map.Entry<String, Object> e : Driver.map(h, "properties").entrySet()) {
            p.put(e.getKey(), String.valueOf(e.getValue()));
        }
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        hello = h;
        props = p;
        emit(ev("ready").num("id", id).num("version", VERSION)
            .str("client", "spring-kafka " + System.getProperty("groupquake.spring-kafka", "unknown") + " (kafka-clients " + Driver.clientsVersion() + ")")
            .str("calls", "wire").str("commits", "own"));
    }

    private static void subscribe(Map<String, Object> msg, long id) {
        List<String> topics = Driver.strings(Driver.list(msg, "topics"));
        if (topics.isEmpty()) {
            topics = Driver.strings(Driver.list(hello, "topics"));
        }
        Driver.J r = ev("subscribed").num("id", id);
        try {
            DefaultKafkaConsumerFactory<byte[], byte[]> cf = new DefaultKafkaConsumerFactory<>(props);
            cf.addPostProcessor(SpringMember::reportCommits);
            ContainerProperties cp = new ContainerProperties(topics.toArray(new String[0]));
            cp.setAckMode(ContainerProperties.AckMode.BATCH); // Spring's default, said here
            cp.setSyncCommits(true); // Spring's default: commitSync, whose outcome own-commit reports
            cp.setShutdownTimeout(10000); // close waits this long for the consumer to leave
            cp.setConsumerRebalanceListener(new Rebalance());
            cp.setMessageListener(new Listener());
            container = new ConcurrentMessageListenerContainer<>(cf, cp);
            container.setConcurrency(1);
            container.setBeanName("groupquake-" + Driver.str(hello, "member", "member"));
            container.setApplicationEventPublisher(SpringMember::event);
            container.start();
        } catch (Exception e) {
            r.str("error", Driver.describe(e));
        }
        emit(r);
    }

    /** Spring's container events: a container that stops by itself has stopped for good. */
    private static void event(Object e) {
        if (closing) {
            return;
        }
        String why = null;
        if (e instanceof ConsumerStoppedEvent) {
            ConsumerStoppedEvent s = (ConsumerStoppedEvent) e;
            if (s.getReason() != ConsumerStoppedEvent.Reason.NORMAL) {
                why = "Spring's listener container stopped its consumer (" + s.getReason() + ")";
            }
        } else if (e instanceof ConsumerFailedToStartEvent) {
            why = "Spring's listener container failed to start its consumer";
        }
        if (why != null && stoppedWhy == null) {
            stoppedWhy = why;
            emit(ev("stopped").str("error", why));
        }
    }

    /** A record the listener was given, waiting for a poll to report it. */
    private static final class Handoff {
        final ConsumerRecord<byte[], byte[]> record;
        final String memberId;
        final long epoch;
        final CountDownLatch done = new CountDownLatch(1);
        volatile boolean reported;

        Handoff(ConsumerRecord<byte[], byte[]> record, String memberId, long epoch) {
            this.record = record;
            this.memberId = memberId;
            this.epoch = epoch;
        }
    }

    /** The application's listener: one record at a time, as a @KafkaListener method taking a record. */
    private static final class Listener implements ConsumerAwareMessageListener<byte[], byte[]> {
        @Override
        public void onMessage(ConsumerRecord<byte[], byte[]> record, Consumer<?, ?> consumer) {
            meta(consumer);
            Handoff h = new Handoff(record, lastMemberId, lastEpoch);
            if (!closing) {
                offered.add(h);
                try {
                    h.done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (!h.reported) {
                // The application is shutting down: the record is not processed, and the error handler
                // keeps its offset from being committed.
                throw new IllegalStateException("the member is closing: record " + record.topic() + "-" + record.partition() + "@" + record.offset() + " not processed");
            }
        }
    }

    private static void poll(long id, long ms) throws InterruptedException {
        if (stoppedWhy != null) {
            emit(ev("polled").num("id", id).str("error", stoppedWhy).str("class", "ConsumerStoppedEvent").raw("fatal", "true"));
            return;
        }
        Handoff h = offered.poll(Math.max(ms, 0), TimeUnit.MILLISECONDS);
        if (h == null) {
            emit(ev("polled").num("id", id).str("member_id", lastMemberId).num("epoch", lastEpoch).raw("records", "[]"));
            return;
        }
        ConsumerRecord<byte[], byte[]> r = h.record;
        Base64.Encoder b64 = Base64.getEncoder();
        StringBuilder b = new StringBuilder("[{\"topic\":").append(Driver.J.quote(r.topic())).append(",\"partition\":").append(r.partition())
            .append(",\"offset\":").append(r.offset());
        if (r.key() != null) {
            b.append(",\"key\":").append(Driver.J.quote(b64.encodeToString(r.key())));
        }
        if (r.value() != null) {
            b.append(",\"value\":").append(Driver.J.quote(b64.encodeToString(r.value())));
        }
        b.append("}]");
        emit(ev("polled").num("id", id).str("member_id", h.memberId).num("epoch", h.epoch).raw("records", b.toString()));
        h.reported = true;
        h.done.countDown();
    }

    private static void close(long id, long ms) {
        closing = true;
        for (Handoff h; (h = offered.poll()) != null; ) {
            h.done.countDown(); // not reported: the listener refuses it
        }
        String err = null;
        try {
            if (container != null) {
                container.stop(); // waits for the consumer thread (shutdownTimeout): it leaves the group on its way out
            }
        } catch (Exception e) {
            err = Driver.describe(e);
        }
        Driver.J r = ev("closed").num("id", id);
        if (err != null) {
            r.str("error", err);
        }
        emit(r);
        out.flush();
        Runtime.getRuntime().halt(0);
    }

    /** Reports Spring's rebalance listener calls; each returns only once the harness acknowledged it. */
    private static final class Rebalance implements ConsumerAwareRebalanceListener {
        @Override
        public void onPartitionsRevokedAfterCommit(Consumer<?, ?> consumer, Collection<TopicPartition> ps) {
            ownership(consumer, "revoked", ps);
        }

        @Override
        public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> ps) {
            ownership(consumer, "assigned", ps);
        }

        @Override
        public void onPartitionsLost(Consumer<?, ?> consumer, Collection<TopicPartition> ps) {
            // Overridden: the default calls the revocation methods, and a loss is no clean hand-off.
            ownership(consumer, "lost", ps);
        }
    }

    /**
     * What the rebalance listener was last told this member owns (touched on the container's thread only).
     * A revocation or loss reports only partitions in it: on close with the consumer protocol, Spring's
     * wrapUp calls unsubscribe (the listener is told revoked) and then close, and kafka-clients 4.4's
     * AsyncKafkaConsumer.close tells the listener the same partitions lost, which Spring's
     * ListenerConsumerRebalanceListener.onPartitionsLost follows with onPartitionsRevoked again; the
     * partitions were given up at the first call, and the repeats are not reported (docs/spring-kafka.md).
     */
    private static final java.util.Set<TopicPartition> owned = new java.util.HashSet<>();

    /** The partitions of ps a kind of event reports, given what the member owns; owned is updated. */
    static List<TopicPartition> toReport(String kind, Collection<TopicPartition> ps, java.util.Set<TopicPartition> owned) {
        List<TopicPartition> r = new ArrayList<>();
        for (TopicPartition tp : ps) {
            if (kind.equals("assigned") ? owned.add(tp) : owned.remove(tp)) {
                r.add(tp);
            }
        }
        return r;
    }

    private static void ownership(Consumer<?, ?> consumer, String kind, Collection<TopicPartition> given) {
        List<TopicPartition> ps = toReport(kind, given, owned);
        if (ps.isEmpty()) {
            return;
        }
        meta(consumer);
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : ps) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append("{\"topic\":").append(Driver.J.quote(tp.topic())).append(",\"partition\":").append(tp.partition()).append('}');
        }
        long s;
        synchronized (SpringMember.class) {
            s = ++seq;
        }
        emit(ev(kind).num("seq", s).str("member_id", lastMemberId).num("epoch", lastEpoch).raw("partitions", b.append(']').toString()));
        while (true) {
            Object a;
            try {
                a = acks.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            if (a == EOF) {
                Runtime.getRuntime().halt(0); // the harness went away
            }
            if (a instanceof Long && (Long) a == s) {
                return;
            }
            System.err.println("member: expected the ack of event " + s + ", got: " + a);
        }
    }

    /** Reads the consumer's group metadata (on the consumer's own thread). */
    private static void meta(Consumer<?, ?> consumer) {
        try {
            ConsumerGroupMetadata m = consumer.groupMetadata();
            lastMemberId = m.memberId();
            lastEpoch = m.generationId();
        } catch (Exception e) {
            // no metadata outside the group
        }
    }

    /** Wraps the container's consumer: each synchronous commit is reported as own-commit with its outcome. */
    @SuppressWarnings("unchecked")
    private static Consumer<byte[], byte[]> reportCommits(Consumer<byte[], byte[]> c) {
        InvocationHandler h = (proxy, method, args) -> {
            boolean commit = method.getName().equals("commitSync") && args != null && args.length >= 1 && args[0] instanceof Map;
            try {
                Object ret = method.invoke(c, args);
                if (commit) {
                    ownCommit((Map<TopicPartition, OffsetAndMetadata>) args[0], null);
                }
                return ret;
            } catch (InvocationTargetException e) {
                if (commit) {
                    ownCommit((Map<TopicPartition, OffsetAndMetadata>) args[0], e.getCause());
                }
                throw e.getCause();
            }
        };
        return (Consumer<byte[], byte[]>) Proxy.newProxyInstance(SpringMember.class.getClassLoader(), new Class<?>[] {Consumer.class}, h);
    }

    private static void ownCommit(Map<TopicPartition, OffsetAndMetadata> offs, Throwable err) {
        if (offs.isEmpty()) {
            return;
        }
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offs.entrySet()) {
            if (b.length() > 1) {
                b.append(',');
            }
            b.append("{\"topic\":").append(Driver.J.quote(e.getKey().topic())).append(",\"partition\":").append(e.getKey().partition())
                .append(",\"offset\":").append(e.getValue().offset()).append('}');
        }
        Driver.J j = ev("own-commit").raw("offsets", b.append(']').toString());
        if (err != null) {
            j.str("error", Driver.describe(err)).str("class", err.getClass().getSimpleName());
        }
        emit(j);
    }

    private static Driver.J ev(String type) {
        Instant now = Instant.now();
        return new Driver.J().str("type", type).num("at", now.getEpochSecond() * 1_000_000L + now.getNano() / 1000);
    }

    private static void emit(Driver.J e) {
        String line = e.done();
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }
}
