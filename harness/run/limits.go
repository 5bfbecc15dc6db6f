package run

import (
	"fmt"
	"time"

	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/internal/machine"
)

// The sizes a run may have: beyond them `groupquake run` refuses the plan
// before anything starts (docs/interrupts.md, Limits). Some are fixed by
// what Kafka or the harness can do, the others derive from the machine
// (machine.This): the files this process may open and its memory.
const (
	// MaxContainerPartitions bounds a container cluster's topic: Kafka's
	// guidance is at most 4,000 partitions a broker, and every broker of
	// a 1- or 3-node cluster here holds a replica of every partition
	// (replication min(nodes, 3)).
	MaxContainerPartitions = 4000
	// MaxRate bounds --rate: the producer sends one record at a time
	// (acks=all, idempotent) and waits for its answer, so a few thousand a
	// second is already beyond a send's round trip; the rate's ticker
	// cannot tick faster either.
	MaxRate = 10000
	// MaxDuration bounds --duration: a workload longer than a day is a
	// soak, which `go test ./suites/soak` runs as many runs, each judged.
	MaxDuration = 24 * time.Hour
	// MaxMembers bounds a run's group: every member is a full client with
	// its own links and goroutines, judged event by event; thousands of
	// members are `groupquake scale`'s (lightweight members).
	MaxMembers = 200

	// fdsPerClient is what one client (a member, the producer, the
	// observer) opens per broker: its connections, each counted at the
	// client, at both ends of its toxiproxy link and, on the embedded
	// cluster, at the broker.
	fdsPerClient = 16
	// fdsReserve is what the process opens besides: listeners, the
	// history, the proxies' API, the Docker client, a JVM's pipes.
	fdsReserve = 256
	// bytesPerEvent is the memory an event of the history takes when the
	// run is judged: read back (1.1 KB allocated, BenchmarkRead) and
	// checked (0.7 KB, BenchmarkCheckAll1M), with headroom.
	bytesPerEvent = 2048
	// memberBytes is a groupquake or kgo member's memory in this process
	// (a kgo client's buffers), jvmBytes a Java member's own JVM
	// (-Xmx192m and the JVM's own), sharedJVMBytes a member hosted in a
	// shared JVM (README, Java members: 68 MB and 19 MB resident,
	// measured; the bounds leave room for the heap to grow).
	memberBytes    = 8 << 20
	jvmBytes       = 256 << 20
	sharedJVMBytes = 32 << 20
)

// SizeError says which size of a plan the machine cannot take, its limit
// and what to do. Its first line names the flag.
type SizeError struct {
	Flag  string
	Value string
	Limit string
	Why   string
	Do    string
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("--%s %s: %s (%s); %s", e.Flag, e.Value, e.Limit, e.Why, e.Do)
}

// Expected sizes the plan p will reach, for CheckSize.
type expected struct {
	brokers   int
	clients   int // members, the producer, the observer
	records   int64
	events    int64
	memory    uint64 // what the members and the history take, in bytes
	javaJVMs  int
	javaBytes uint64
}

func (p Plan) expected() expected {
	var e expected
	switch {
	case p.Options.Embedded:
		e.brokers = 1
	case len(p.Options.Bootstrap) > 0:
		e.brokers = len(p.Options.Bootstrap)
	default:
		e.brokers = max(p.Options.Nodes, 1)
	}
	e.clients = len(p.Members) + len(p.Producers) + 1
	secs := int64(p.Workload / time.Second)
	for _, pp := range p.Producers {
		e.records += int64(pp.Rate) * max(secs, 1)
	}
	if lim := int64(p.Options.Records); lim > 0 && lim < e.records {
		e.records = lim
	}
	// Every record: its send (invoke, ok) and at least one consume. Every
	// member: a heartbeat (invoke, ok) each interval through the warm-up,
	// workload and quiesce, and its commits. Every fault: start and stop.
	hb := max(int64(p.Timers.HeartbeatInterval/time.Second), 1)
	around := int64((p.WarmupMax + p.QuiesceMax) / time.Second / 2)
	e.events = 3*e.records + int64(len(p.Members))*4*(secs+around)/hb + 4*int64(len(p.Faults)) + 1000
	e.memory = uint64(e.events) * bytesPerEvent
	shared := p.Options.JavaJVMs == kinds.JavaJVMsShared
	for _, m := range p.Members {
		switch {
		case !kinds.IsJavaKind(m.Kind):
			e.memory += memberBytes
		case shared:
			e.javaBytes += sharedJVMBytes
		default:
			e.javaJVMs++
			e.javaBytes += jvmBytes
		}
	}
	if shared && e.javaBytes > 0 {
		e.javaBytes += jvmBytes // the shared JVM itself
	}
	return e
}

// CheckOptions refuses, before a plan is drawn (drawing the faults of a
// week-long workload alone takes long), options whose plan CheckSize would
// refuse whatever the seed chooses: it checks a sketch of the plan with the
// seed's choices at their smallest (partitions 3, the rate 20 records a
// second, 2 members).
func CheckOptions(o Options, m machine.Machine) error {
	p := Plan{Options: o, Workload: o.Duration, WarmupMax: 90 * time.Second, QuiesceMax: 72 * time.Second,
		Timers: Timers{HeartbeatInterval: time.Second}}
	p.Topics = []history.TopicPlan{{Partitions: max(o.Partitions, 3)}}
	n := o.Members
	if n == 0 {
		n = max(len(o.Kinds), 2)
	}
	for i := range n {
		k := ""
		if len(o.Kinds) > 0 {
			k = o.Kinds[i%len(o.Kinds)]
		}
		p.Members = append(p.Members, MemberPlan{Kind: k})
	}
	p.Producers = []ProducerPlan{{Rate: max(o.Rate, 20)}}
	return p.CheckSize(m)
}

// CheckSize refuses a plan that the machine m cannot take: too many
// partitions for the cluster (or for the files this process may open, on
// the embedded cluster, which keeps every partition's log open), too many
// members, a rate beyond what the producer can send, or a workload whose
// history would not fit in memory to be judged. Each error says the limit,
// why, and what to do.
func (p Plan) CheckSize(m machine.Machine) error {
	o := p.Options
	e := p.expected()
	parts := int64(0)
	for _, t := range p.Topics {
		parts += int64(t.Partitions)
	}
	half := m.Memory / 2 // the rest for the cluster, the JVMs of the brokers, the system
	switch {
	case o.Rate > MaxRate:
		return &SizeError{"rate", fmt.Sprint(o.Rate), fmt.Sprintf("at most %d records a second", MaxRate),
			"the producer sends one record at a time and waits for its acks=all answer", fmt.Sprintf("give at most %d", MaxRate)}
	case p.Workload > MaxDuration:
		return &SizeError{"duration", p.Workload.String(), "at most " + MaxDuration.String(),
			"a longer workload is a soak", "run `go test ./suites/soak -soak.duration=...` for many judged runs, or give at most 24h"}
	case len(p.Members) > MaxMembers:
		return &SizeError{"members", fmt.Sprint(len(p.Members)), fmt.Sprintf("at most %d members", MaxMembers),
			"every member of a run is a full client with its own links, judged event by event", "give at most 200; `groupquake scale` puts thousands of lightweight members in one group"}
	case !o.Embedded && len(o.Bootstrap) == 0 && parts > MaxContainerPartitions:
		return &SizeError{"partitions", fmt.Sprint(parts), fmt.Sprintf("at most %d on a container cluster", MaxContainerPartitions),
			"every broker holds a replica of every partition, and Kafka's guidance is at most 4,000 partitions a broker", fmt.Sprintf("give at most %d", MaxContainerPartitions)}
	}
	fds := uint64(fdsReserve) + uint64(e.clients*e.brokers*fdsPerClient)
	if o.Embedded {
		fds += uint64(parts) + 3 // every partition's log is open, __consumer_offsets' too
	}
	if fds > m.FDs {
		if o.Embedded && uint64(parts) > 0 && fds-uint64(parts) < m.FDs {
			most := m.FDs - (fds - uint64(parts))
			return &SizeError{"partitions", fmt.Sprint(parts), fmt.Sprintf("at most %d on the embedded cluster on this machine", most),
				fmt.Sprintf("it keeps every partition's log open, this process may open %d files (ulimit -n), and its %d clients need %d", m.FDs, e.clients, fds-uint64(parts)-3),
				fmt.Sprintf("give at most %d, or raise the limit (ulimit -n)", most)}
		}
		return &SizeError{"members", fmt.Sprint(len(p.Members)), fmt.Sprintf("at most %d members on this machine", (m.FDs-fdsReserve)/uint64(e.brokers*fdsPerClient)-2),
			fmt.Sprintf("each member opens about %d files per broker, and this process may open %d (ulimit -n)", fdsPerClient, m.FDs),
			"give fewer members, or raise the limit (ulimit -n)"}
	}
	if e.javaBytes > half {
		most := half / jvmBytes
		what := fmt.Sprintf("%d Java members in their own JVMs take about %d MB each", e.javaJVMs, jvmBytes>>20)
		do := fmt.Sprintf("give at most %d Java members, or host them in one JVM with --java-jvms shared", most)
		if o.JavaJVMs == kinds.JavaJVMsShared {
			most = (half - jvmBytes) / sharedJVMBytes
			what = fmt.Sprintf("Java members hosted in one JVM take about %d MB each", sharedJVMBytes>>20)
			do = fmt.Sprintf("give at most %d Java members", most)
		}
		return &SizeError{"members", fmt.Sprint(len(p.Members)), "more Java members than half this machine's memory (" + machine.GiB(half) + ") holds", what, do}
	}
	if e.memory > half {
		most := max(int64(0), (int64(half/bytesPerEvent)-(e.events-3*e.records))/3)
		flag, val := "duration", p.Workload.String()
		switch {
		case o.Records > 0 && int64(o.Records) == e.records:
			flag, val = "records", fmt.Sprint(o.Records)
		case o.Rate > 0:
			flag, val = "rate", fmt.Sprint(o.Rate)
		}
		return &SizeError{flag, val, fmt.Sprintf("at most about %d records a run on this machine", most),
			fmt.Sprintf("the run would write about %d records (%d history events); judging them takes about %d bytes an event, and half this machine's memory is %s", e.records, e.events, bytesPerEvent, machine.GiB(half)),
			"give a shorter --duration, a lower --rate or --records " + fmt.Sprint(most)}
	}
	return nil
}
