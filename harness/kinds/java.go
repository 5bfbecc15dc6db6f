package kinds

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
)

// The layouts of the Java members' JVMs (MemberSpec.JavaJVMs, the plan's
// --java-jvms).
const (
	JavaJVMsPerMember = "per-member"
	JavaJVMsShared    = "shared"
)

// JavaKind is a member kind backed by the official Java KafkaConsumer
// (clients/java). The Java kinds are never in Default, so a seed never
// draws them (a machine may have no JDK); WithJava adds the ones a user
// names (groupquake run --kinds java-classic,...).
type JavaKind struct {
	Name     string
	Protocol clients.Protocol
	Assignor string
	// Offers is the classic assignors the kind's JoinGroup offers
	// (Factory.Offers).
	Offers []string
	Doc    string
}

// JavaKinds lists the Java member kinds.
func JavaKinds() []JavaKind {
	return []JavaKind{
		{Name: "java-classic", Protocol: clients.Classic, Assignor: "range", Offers: javaDefaultOffers,
			Doc: "the Java KafkaConsumer, classic protocol with Java's default assignors (range, then cooperative-sticky: EAGER rebalances); static with an instance id"},
		{Name: "java-classic-cooperative", Protocol: clients.Classic, Assignor: "cooperative-sticky", Offers: []string{assignCoopSticky},
			Doc: "the Java KafkaConsumer, classic protocol with the cooperative-sticky assignor alone (KIP-429 COOPERATIVE rebalances)"},
		{Name: "java-consumer", Protocol: clients.Consumer, Assignor: "uniform",
			Doc: "the Java KafkaConsumer, group.protocol=consumer (KIP-848), server assignor uniform"},
		{Name: "java-consumer-range", Protocol: clients.Consumer, Assignor: "range",
			Doc: "the Java KafkaConsumer, group.protocol=consumer (KIP-848), server assignor range"},
	}
}

func init() { register(javaFamily) }

// javaFamily is the Java kinds as a Family.
var javaFamily = Family{
	Help:     "the Java KafkaConsumer kinds, which need a JDK and Maven",
	Names:    JavaKindNames(),
	Registry: func() Registry { return Java(nil) },
	Prepare: func(_ context.Context, want []string, env Env) (Registry, error) {
		if err := java.CheckJava(); err != nil {
			return nil, fmt.Errorf("member kinds %s: %w", strings.Join(want, ", "), err)
		}
		return Java(env.toolchain()), nil
	},
}

// JavaKindNames lists the names of JavaKinds, in their order.
func JavaKindNames() []string {
	var n []string
	for _, k := range JavaKinds() {
		n = append(n, k.Name)
	}
	return n
}

// IsJavaKind says whether kind is one of JavaKinds.
func IsJavaKind(kind string) bool {
	return slices.ContainsFunc(JavaKinds(), func(k JavaKind) bool { return k.Name == kind })
}

// Java returns the Java kinds as a registry whose members are prepared
// by tc (kafka-clients resolved and the driver compiled on first
// use). Each member runs its own JVM of the kafka-clients version
// MemberSpec.KafkaClients names, or, when MemberSpec.JavaJVMs is
// JavaJVMsShared, is hosted in the registry's one JVM of that version
// (java.Host) with the other members of the same spec. A nil tc is a
// toolchain that logs nothing.
func Java(tc *java.Toolchain) Registry {
	if tc == nil {
		tc = &java.Toolchain{}
	}
	r := Registry{}
	var hostsMu sync.Mutex
	hosts := map[string]*java.Host{} // by kafka-clients version
	host := func(rt java.Runtime) *java.Host {
		hostsMu.Lock()
		defer hostsMu.Unlock()
		if h, ok := hosts[rt.KafkaClients]; ok {
			return h
		}
		h := java.NewHost(rt, nil)
		hosts[rt.KafkaClients] = h
		return h
	}
	for _, k := range JavaKinds() {
		r[k.Name] = Factory{
			Protocol: k.Protocol,
			Offers:   k.Offers,
			Doc:      k.Doc,
			New: func(s MemberSpec) (clients.Member, error) {
				version := s.KafkaClients
				if version == "" {
					return nil, fmt.Errorf("member %s (%s): no kafka-clients version: the plan names none (--kafka-clients, or the cluster's --kafka)", s.Name, k.Name)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				rt, err := tc.Prepare(ctx, version)
				if err != nil {
					return nil, fmt.Errorf("member %s (%s): %w", s.Name, k.Name, err)
				}
				opts := []java.Opt{
					java.Protocol(k.Protocol), java.Assignor(k.Assignor), java.WithHooks(s.Hooks), java.KgoOpts(s.KgoOpts...),
					java.WithClock(clients.ClockFunc(s.Now)), java.WithRuntime(rt),
				}
				switch s.JavaJVMs {
				case JavaJVMsShared:
					opts = append(opts, java.Hosted(host(rt)))
				case "", JavaJVMsPerMember:
				default:
					return nil, fmt.Errorf("member %s (%s): Java JVM layout %q is not %s or %s", s.Name, k.Name, s.JavaJVMs, JavaJVMsPerMember, JavaJVMsShared)
				}
				poll := s.PollInterval
				if poll == 0 {
					// Java's classic rebalance timeout is max.poll.interval.ms.
					poll = s.RebalanceTimeout
				}
				opts = append(opts, java.SessionTimeout(s.SessionTimeout), java.HeartbeatInterval(s.HeartbeatInterval), java.MaxPollInterval(poll))
				if s.InstanceID != "" {
					opts = append(opts, java.InstanceID(s.InstanceID))
				}
				return java.New(s.Name, s.Group, s.Topics, opts...)
			},
			// commitSync retries a commit on retriable errors (a coordinator
			// move, a lost connection) on its own.
			ResendsCommits: true,
		}
	}
	return r
}

// WithJava returns r plus the Java kinds among named. Naming one on a
// machine without a JDK (java, javac) or Maven is an error that says what
// to install; naming none changes nothing.
func (r Registry) WithJava(named []string, tc *java.Toolchain) (Registry, error) {
	return r.withFamily(context.Background(), javaFamily, named, Env{Toolchain: tc})
}
