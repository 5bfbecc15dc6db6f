#!/usr/bin/env python3
"""A consumer-group member on confluent-kafka (librdkafka) that speaks
groupquake's member protocol, version 1 (docs/member-protocol.md): one JSON
object a line, harness to member on standard input, member to harness on
standard output. groupquake's member kind confluent-python runs it, one
process per member; `groupquake member-check --impl confluent-python` checks it.

It connects to the brokers only through the addresses hello gives (the
member's gateway, which rewrites the broker addresses of Metadata and
FindCoordinator answers to its own), so the gateway reads its group requests
off the wire: it reports no calls (ready: calls "wire") and commits only when
asked (commits "application").

What it reports itself: the rebalance callbacks (on_assign, on_revoke,
on_lost), each answered by the harness's ack before the callback returns;
the records poll hands to the application; the outcome of the commits it was
asked for; a fatal error (librdkafka's fatal errors, e.g. a static member
fenced) as a fatal poll.

Needs Python 3.8 or newer and confluent-kafka (pip install confluent-kafka);
the consumer protocol (KIP-848) needs confluent-kafka and librdkafka 2.12 or
newer.
"""

import base64
import json
import os
import queue
import struct
import sys
import threading
import time

VERSION = 1

# The protocol's lines go to the real standard output; anything else that
# writes to file descriptor 1 (a library's print) goes to standard error.
_out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr
_out_lock = threading.Lock()

try:
    import confluent_kafka as ck
except ImportError as e:  # refused in hello, where the harness can read why
    ck = None
    _import_error = str(e)


def now_us():
    return int(time.time() * 1_000_000)


def emit(msg):
    msg["at"] = now_us()
    line = json.dumps(msg, separators=(",", ":"))
    with _out_lock:
        _out.write(line + "\n")
        _out.flush()


def log(*args):
    print("member:", *args, file=sys.stderr, flush=True)


EOF = object()


class Member:
    def __init__(self):
        self.cmds = queue.Queue()
        self.acks = queue.Queue()
        self.consumer = None
        self.hello = None
        self.seq = 0
        self.thawed = threading.Event()
        self.thawed.set()
        self.eof = False

    # --- the harness's lines ------------------------------------------------

    def read(self):
        """Routes the harness's lines: crash ends the process at once, acks go
        to the callback waiting for them, the rest are commands, in order."""
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
                if not isinstance(msg, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                emit({"type": "error", "code": "bad_message", "error": "a line that is not a JSON object: %s" % e})
                continue
            t = msg.get("type")
            if t == "crash":
                # Abandon the consumer: no leave, no word; the OS closes the
                # connections (the harness has cut the links already).
                os._exit(0)
            elif t == "ack":
                self.acks.put(msg.get("seq"))
            elif t == "freeze":
                self.thawed.clear()
            elif t == "thaw":
                self.thawed.set()
            else:
                self.cmds.put(msg)
        self.eof = True
        self.thawed.set()
        self.cmds.put(EOF)
        self.acks.put(EOF)

    # --- the member's loop --------------------------------------------------

    def serve(self):
        while True:
            msg = self.cmds.get()
            self.thawed.wait()
            if msg is EOF:
                # Standard input closed: end without waiting (the OS closes
                # the connections).
                os._exit(0)
            t = msg.get("type")
            mid = msg.get("id") or 0
            if self.hello is None and t != "hello":
                if t in ("subscribe", "poll", "commit", "close"):
                    emit({"type": "error", "id": mid, "code": "bad_message", "error": "%s before hello" % t})
                    continue
            if t == "hello":
                self.do_hello(msg, mid)
            elif t == "subscribe":
                self.do_subscribe(msg, mid)
            elif t == "poll":
                self.do_poll(msg, mid)
            elif t == "commit":
                self.do_commit(msg, mid)
            elif t == "close":
                self.do_close(msg, mid)
            else:
                e = {"type": "error", "code": "unknown_message", "error": "unknown message type %s" % t}
                if mid:
                    e["id"] = mid
                emit(e)

    def fatal_hello(self, mid, code, text):
        emit({"type": "error", "id": mid, "code": code, "fatal": True, "error": text})
        os._exit(0)

    def do_hello(self, h, mid):
        if self.hello is not None:
            emit({"type": "error", "id": mid, "code": "bad_message", "error": "a second hello"})
            return
        versions = h.get("versions") or []
        if VERSION not in versions:
            self.fatal_hello(mid, "unsupported_version", "this member speaks member protocol version %d, hello offered %s" % (VERSION, versions))
        if ck is None:
            self.fatal_hello(mid, "bad_config", "confluent-kafka is not installed (%s): pip install confluent-kafka" % _import_error)
        protocol = h.get("group_protocol") or "classic"
        if protocol not in ("classic", "consumer"):
            self.fatal_hello(mid, "bad_config", "group protocol %s is not classic or consumer" % protocol)
        assignor = h.get("assignor") or ""
        timers = h.get("timers") or {}
        conf = {
            "bootstrap.servers": ",".join(h.get("bootstrap") or []),
            "group.id": h.get("group") or "",
            "client.id": "groupquake-" + (h.get("member") or "member"),
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            # The gateway's listeners are loopback addresses: never resolve
            # them to anything else.
            "broker.address.family": "v4",
        }
        if h.get("instance_id"):
            conf["group.instance.id"] = h["instance_id"]
        if timers.get("poll_interval_ms"):
            # librdkafka's JoinGroup rebalance timeout is max.poll.interval.ms.
            conf["max.poll.interval.ms"] = int(timers["poll_interval_ms"])
        if protocol == "consumer":
            # KIP-848: librdkafka 2.12 or newer (older ones do not know the
            # setting and refuse it in bad_config).
            conf["group.protocol"] = "consumer"
            conf["group.remote.assignor"] = assignor or "uniform"
        else:
            strategies = {"": "range,roundrobin", "range": "range", "roundrobin": "roundrobin", "cooperative-sticky": "cooperative-sticky"}
            if assignor not in strategies:
                self.fatal_hello(mid, "bad_config", "assignor %s is not range, roundrobin or cooperative-sticky" % assignor)
            conf["partition.assignment.strategy"] = strategies[assignor]
            if timers.get("session_ms"):
                conf["session.timeout.ms"] = int(timers["session_ms"])
            if timers.get("heartbeat_ms"):
                conf["heartbeat.interval.ms"] = int(timers["heartbeat_ms"])
        for k, v in (h.get("properties") or {}).items():
            conf[k] = v
        try:
            self.consumer = ck.Consumer(conf)
        except Exception as e:  # an unknown or invalid setting
            self.fatal_hello(mid, "bad_config", "creating the consumer: %s" % describe(e))
        self.hello = h
        emit({"type": "ready", "id": mid, "version": VERSION,
              "client": "confluent-kafka %s (librdkafka %s)" % (client_version(), ck.libversion()[0]),
              "calls": "wire", "commits": "application"})

    def do_subscribe(self, msg, mid):
        topics = msg.get("topics") or self.hello.get("topics") or []
        r = {"type": "subscribed", "id": mid}
        try:
            self.consumer.subscribe(topics, on_assign=self.on_assign, on_revoke=self.on_revoke, on_lost=self.on_lost)
        except Exception as e:
            r["error"] = describe(e)
        emit(r)

    # --- rebalance callbacks: run inside poll and close, on this thread -----

    def on_assign(self, consumer, partitions):
        self.ownership("assigned", partitions)

    def on_revoke(self, consumer, partitions):
        self.ownership("revoked", partitions)

    def on_lost(self, consumer, partitions):
        # Given on its own: without it confluent-kafka calls on_revoke, and a
        # loss is no clean hand-off.
        self.ownership("lost", partitions)

    def ownership(self, kind, partitions):
        """Reports a callback and returns only once the harness acknowledged
        it (the partitions are then assigned or given up, by confluent-kafka,
        after the callback returns)."""
        if not partitions:
            return
        self.seq += 1
        s = self.seq
        ev = self.meta({"type": kind, "seq": s, "partitions": [{"topic": p.topic, "partition": p.partition} for p in partitions]})
        emit(ev)
        while True:
            a = self.acks.get()
            if a is EOF:
                os._exit(0)  # the harness went away
            if a == s:
                self.thawed.wait()
                return
            log("expected the ack of event %d, got %r" % (s, a))

    def meta(self, msg):
        """Adds the consumer's group metadata: its member id, and the
        generation (classic) or member epoch (consumer) librdkafka holds."""
        try:
            mid = self.consumer.memberid()
            if mid:
                msg["member_id"] = mid
            md = self.consumer.consumer_group_metadata()
            # librdkafka's serialized group metadata: "CGMDv2:", then the
            # generation id as a native int32, then the strings.
            if isinstance(md, (bytes, bytearray)) and md[:7] == b"CGMDv2:" and len(md) >= 11:
                msg["epoch"] = struct.unpack("=i", md[7:11])[0]
        except Exception as e:
            log("group metadata: %s" % describe(e))
        return msg

    # --- commands -----------------------------------------------------------

    def do_poll(self, msg, mid):
        timeout = max(int(msg.get("timeout_ms") or 250), 0) / 1000.0
        records = []
        r = {"type": "polled", "id": mid}
        try:
            first = self.consumer.poll(timeout)
            batch = [first] if first is not None else []
            if first is not None:
                batch += self.consumer.consume(num_messages=499, timeout=0)
            for m in batch:
                err = m.error()
                if err is not None:
                    if err.fatal():
                        raise ck.KafkaException(err)
                    # librdkafka's informational errors (a broker down, a
                    # partition at its end): it goes on by itself.
                    log("poll: %s" % err)
                    continue
                rec = {"topic": m.topic(), "partition": m.partition(), "offset": m.offset()}
                if m.key() is not None:
                    rec["key"] = base64.b64encode(m.key()).decode("ascii")
                if m.value() is not None:
                    rec["value"] = base64.b64encode(m.value()).decode("ascii")
                records.append(rec)
        except Exception as e:
            r = self.meta({"type": "polled", "id": mid, "error": describe(e), "class": type(e).__name__})
            if is_fatal(e):
                # librdkafka's fatal errors leave the consumer unusable: the
                # application closes it and its supervisor starts it again.
                r["fatal"] = True
            emit(r)
            return
        r = self.meta(r)
        r["records"] = records
        emit(r)

    def do_commit(self, msg, mid):
        offsets = [ck.TopicPartition(o["topic"], int(o["partition"]), int(o["offset"])) for o in (msg.get("offsets") or [])]
        timeout = max(int(msg.get("timeout_ms") or 15000), 1000) / 1000.0
        done, result, e = within(lambda: self.consumer.commit(offsets=offsets, asynchronous=False), timeout)
        r = {"type": "committed", "id": mid}
        if not done:
            r["error"] = "the commit did not finish within %dms" % (timeout * 1000)
            r["class"] = "Timeout"
        elif e is not None:
            r["error"], r["class"] = describe(e), type(e).__name__
        else:
            perrs = [{"topic": p.topic, "partition": p.partition, "error": p.error.name()} for p in (result or []) if p.error is not None]
            if perrs:
                r["partition_errors"] = perrs
                r["error"] = "the commit failed for %d partitions" % len(perrs)
        emit(self.meta(r))

    def do_close(self, msg, mid):
        timeout = max(int(msg.get("timeout_ms") or 10000), 1000) / 1000.0
        # close leaves the group (LeaveGroup, or a leave heartbeat), calling
        # the revocation callback on the way.
        done, _, e = within(self.consumer.close, timeout)
        r = {"type": "closed", "id": mid}
        if not done:
            r["error"] = "the consumer did not close within %dms" % (timeout * 1000)
        elif e is not None:
            r["error"] = describe(e)
        emit(r)
        _out.flush()
        os._exit(0)


def within(fn, timeout):
    """Runs fn on a thread of its own and waits for it at most timeout
    seconds: librdkafka's synchronous commit and close take no time limit, so
    one still running when the command's time is up is given up on (an
    unknown outcome). Returns (done, fn's result, the exception it raised)."""
    out = {}

    def run():
        try:
            out["result"] = fn()
        except Exception as e:
            out["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        return False, None, None
    return True, out.get("result"), out.get("error")


def client_version():
    v = ck.version()  # a tuple (version, number) in older releases
    return v[0] if isinstance(v, tuple) else str(v)


def is_fatal(e):
    if ck is not None and isinstance(e, ck.KafkaException) and e.args:
        err = e.args[0]
        if isinstance(err, ck.KafkaError):
            return err.fatal()
    return False


def describe(e):
    if ck is not None and isinstance(e, ck.KafkaException) and e.args and isinstance(e.args[0], ck.KafkaError):
        err = e.args[0]
        return "%s: %s" % (err.name(), err.str())
    return "%s: %s" % (type(e).__name__, e)


def main():
    m = Member()
    threading.Thread(target=m.read, name="reader", daemon=True).start()
    m.serve()


if __name__ == "__main__":
    main()
