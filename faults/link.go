package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The link kinds act on one client's own links (toxiproxy), to one broker
// or to all, without touching any other client.
const (
	LinkCut     Kind = "link-cut"     // connection refused for one client
	LinkLatency Kind = "link-latency" // added delay both ways
	LinkSlow    Kind = "link-bandwidth"
	LinkHole    Kind = "link-blackhole" // connections stay open, no bytes pass
	LinkReset   Kind = "link-reset"     // connections reset
)

type linkKind struct {
	kind  Kind
	doc   string
	apply func(Link, Fault) error
	check func(Fault) error
	param func(*rand.Rand, Space, *Fault)
	// closes says the client's connections close (see EndsSessions).
	closes bool
	// scenarios says the member-links and combined scenarios draw it (see
	// InScenarios).
	scenarios bool
}

func init() {
	register(linkKind{kind: LinkCut, scenarios: true, closes: true, doc: "refuse one client's connections to a broker (or all) and close the open ones",
		apply: func(l Link, f Fault) error { return l.Cut(f.Node) }})
	register(linkKind{kind: LinkLatency, scenarios: true, doc: "delay one client's traffic to a broker (or all) both ways",
		apply: func(l Link, f Fault) error { return l.Latency(f.Node, f.Latency, f.Jitter) },
		check: func(f Fault) error {
			if f.Latency <= 0 {
				return fmt.Errorf("fault %s needs a positive latency", f.Kind)
			}
			return nil
		},
		param: func(rng *rand.Rand, s Space, f *Fault) {
			f.Latency = time.Duration(rng.Int64N(int64(s.maxLatency()))) + time.Millisecond
			f.Jitter = f.Latency / 4
		}})
	register(linkKind{kind: LinkSlow, doc: "throttle one client's traffic to a broker (or all) to a few KB/s",
		apply: func(l Link, f Fault) error { return l.Bandwidth(f.Node, f.KBPerSec) },
		check: func(f Fault) error {
			if f.KBPerSec <= 0 {
				return fmt.Errorf("fault %s needs a positive kb_per_sec", f.Kind)
			}
			return nil
		},
		param: func(rng *rand.Rand, _ Space, f *Fault) { f.KBPerSec = 16 + rng.Int64N(1024) }})
	register(linkKind{kind: LinkHole, scenarios: true, closes: true, doc: "keep one client's connections open but let no byte through",
		apply: func(l Link, f Fault) error { return l.Blackhole(f.Node) }})
	register(linkKind{kind: LinkReset, scenarios: true, closes: true, doc: "reset one client's connections to a broker (or all) as they carry data",
		apply: func(l Link, f Fault) error { return l.ResetPeer(f.Node, 0) }})
}

func (k linkKind) Kind() Kind         { return k.kind }
func (k linkKind) Family() Family     { return FamilyLink }
func (k linkKind) Doc() string        { return k.doc }
func (k linkKind) endsSessions() bool { return k.closes }
func (k linkKind) inScenarios() bool  { return k.scenarios }

func (k linkKind) unfit(s Space) string {
	if len(s.Clients) == 0 || len(s.Brokers) == 0 {
		return "no client links to fault"
	}
	return ""
}

func (k linkKind) durations(s Space) (time.Duration, time.Duration) {
	return s.MinDuration, s.MaxDuration
}

func (k linkKind) draw(rng *rand.Rand, s Space, f *Fault) {
	f.Client = s.Clients[rng.IntN(len(s.Clients))]
	f.Node = AllNodes
	if rng.IntN(2) == 0 {
		f.Node = s.Brokers[rng.IntN(len(s.Brokers))]
	}
	if k.param != nil {
		k.param(rng, s, f)
	}
}

func (k linkKind) validate(f Fault) error {
	if f.Client == "" {
		return fmt.Errorf("fault %s needs a client", f.Kind)
	}
	if f.Member != "" {
		return fmt.Errorf("fault %s acts on client links, not on member %q's life (use a churn kind)", f.Kind, f.Member)
	}
	if f.Node < AllNodes {
		return fmt.Errorf("fault %s: node %d is neither a node id nor every node (%d)", f.Kind, f.Node, AllNodes)
	}
	if k.check != nil {
		return k.check(f)
	}
	return nil
}

func (k linkKind) links(env Env, f Fault) (Link, error) {
	if env.Links == nil {
		return nil, errNoPart(f, "client links")
	}
	return env.Links(f.Client)
}

func (k linkKind) Apply(_ context.Context, env Env, f Fault) (string, error) {
	l, err := k.links(env, f)
	if err != nil {
		return "", err
	}
	return "", k.apply(l, f)
}

func (k linkKind) Heal(_ context.Context, env Env, f Fault) (string, error) {
	l, err := k.links(env, f)
	if err != nil {
		return "", err
	}
	return "", l.Heal(f.Node)
}
