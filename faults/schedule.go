package faults

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Space says which faults fit a cluster and a workload: what a schedule may
// pick from. Kinds that do not fit are filtered out before one is picked,
// so a schedule never asks a cluster for something it cannot do.
type Space struct {
	// Nodes are the nodes node faults may act on (empty: no node faults,
	// as on an external cluster without node control).
	Nodes []NodeID
	// Brokers are the nodes clients connect to; link faults cut a client
	// from one of them or from all.
	Brokers []NodeID
	// Clients are the clients whose links may be faulted.
	Clients []string
	// Members are the group's members churn may act on.
	Members []string
	// Kinds are the fault kinds allowed; empty allows every kind that fits.
	Kinds []Kind
	// MaxNodesDown bounds how many nodes may be faulted at once, so that a
	// 3-node quorum survives (1 for three nodes); 0 means 1.
	MaxNodesDown int
	// MaxMembersAway bounds how many members churn may keep away or
	// stalled at once; 0 means all but one.
	MaxMembersAway int
	// Horizon is the length of the workload phase: every fault starts and
	// heals inside it.
	Horizon time.Duration
	// MinDuration and MaxDuration bound how long one node or link fault
	// lasts (churn kinds draw theirs from the group's timers).
	MinDuration, MaxDuration time.Duration
	// MaxLatency bounds injected latency; 0 means 500 ms.
	MaxLatency time.Duration
	// SessionTimeout, HeartbeatInterval and PollInterval are the group's
	// timers: churn kinds size their faults by them.
	SessionTimeout, HeartbeatInterval, PollInterval time.Duration
	// CoordinatorAware makes half of the node faults hit the group
	// coordinator's node, and some of them start on a churn event's
	// rebalance (a coordinator move while a rebalance is in flight).
	CoordinatorAware bool
	// ShareAware (a share group's run) makes three node faults in four hit
	// a role as it starts: the group coordinator, a partition's share
	// coordinator or a partition's leader (the share-partition leader),
	// among Partitions workload partitions.
	ShareAware bool
	Partitions int32
}

func (s Space) allowed(k Kind) bool { return len(s.Kinds) == 0 || slices.Contains(s.Kinds, k) }

func (s Space) maxLatency() time.Duration {
	if s.MaxLatency == 0 {
		return 500 * time.Millisecond
	}
	return s.MaxLatency
}

// candidates lists the kinds that fit s, by family.
func (s Space) candidates() map[Family][]Kind {
	out := map[Family][]Kind{}
	for _, k := range Kinds() {
		d := registry[k]
		if s.allowed(k) && d.unfit(s) == "" {
			out[d.Family()] = append(out[d.Family()], k)
		}
	}
	return out
}

func (s Space) validate() error {
	if s.Horizon <= 0 {
		return fmt.Errorf("fault space: horizon must be positive, got %s", s.Horizon)
	}
	if s.MinDuration <= 0 || s.MaxDuration < s.MinDuration {
		return fmt.Errorf("fault space: durations must satisfy 0 < min (%s) ≤ max (%s)", s.MinDuration, s.MaxDuration)
	}
	if s.MinDuration > s.Horizon {
		return fmt.Errorf("fault space: the shortest fault (%s) does not fit the horizon (%s)", s.MinDuration, s.Horizon)
	}
	for _, k := range s.Kinds {
		d, ok := registry[k]
		if !ok {
			return fmt.Errorf("fault space: unknown fault kind %q: known kinds are %s", k, kindList())
		}
		if why := d.unfit(s); why != "" {
			return fmt.Errorf("fault kind %s does not fit this run: %s", k, why)
		}
	}
	if len(s.candidates()) == 0 {
		return errors.New("fault space: no fault fits (no nodes for node faults, no clients or brokers for link faults, fewer than two members for churn, or no allowed kind among them)")
	}
	return nil
}

// Intensity is how many faults a schedule draws per minute of workload.
type Intensity float64

// The named intensities. Normal keeps a group under a fault or a
// membership change for most of the workload (see Coverage).
const (
	Low    Intensity = 3
	Normal Intensity = 10
	High   Intensity = 20
)

// ParseIntensity reads "low", "normal", "high", or a rate of faults per
// minute ("12", "12/min").
func ParseIntensity(s string) (Intensity, error) {
	switch strings.TrimSpace(s) {
	case "low":
		return Low, nil
	case "normal", "":
		return Normal, nil
	case "high":
		return High, nil
	}
	n, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "/min"), 64)
	if err != nil || n <= 0 || n > 600 || math.IsNaN(n) {
		return 0, fmt.Errorf("intensity %q is neither a level (low, normal, high) nor a rate of faults per minute above 0 and at most 600 (e.g. 12/min)", s)
	}
	return Intensity(n), nil
}

func (i Intensity) String() string {
	switch i {
	case Low:
		return "low"
	case Normal:
		return "normal"
	case High:
		return "high"
	}
	return strconv.FormatFloat(float64(i), 'g', -1, 64) + "/min"
}

// Count is how many faults the intensity draws over horizon (at least one).
func (i Intensity) Count(horizon time.Duration) int {
	return max(1, int(math.Round(float64(i)*horizon.Minutes())))
}

// Generate picks up to n faults from s with rng. Every fault starts inside
// the horizon and heals before it ends. Faults of different targets
// overlap freely (a link fault on one member while the coordinator moves,
// churn during a node fault); two faults on one target never do. Node faults
// never take more than MaxNodesDown nodes at once, churn never keeps more
// than MaxMembersAway members away. Families are drawn with equal odds, so
// five link kinds do not drown two node kinds. A churn fault sometimes
// comes in a burst (more churn within one heartbeat interval), and with
// CoordinatorAware, sometimes with a fault on the coordinator's node that
// starts once the churn's rebalance is in flight. The result is sorted by
// start time; the same rng state gives the same schedule.
func Generate(rng *rand.Rand, s Space, n int) ([]Fault, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	if s.MaxNodesDown == 0 {
		s.MaxNodesDown = 1
	}
	if s.MaxMembersAway == 0 {
		s.MaxMembersAway = max(1, len(s.Members)-1)
	}
	cands := s.candidates()
	var fams []Family
	for _, fam := range []Family{FamilyNode, FamilyLink, FamilyChurn} {
		if len(cands[fam]) > 0 {
			fams = append(fams, fam)
		}
	}
	g := gen{s: s, rng: rng}
	// Tries are bounded: a crowded space yields fewer faults, never a hang.
	for tries := 0; len(g.out) < n && tries < 50*n; tries++ {
		fam := fams[rng.IntN(len(fams))]
		f, ok := g.place(cands[fam][rng.IntN(len(cands[fam]))], -1, nil)
		if !ok || fam != FamilyChurn {
			continue
		}
		// The moment the churn changes the group: when the member goes, or
		// for a late joiner, when it comes.
		event := f.At
		if f.Kind == MemberJoin {
			event = f.At + f.For
		}
		if s.HeartbeatInterval > 0 && len(g.out) < n && rng.IntN(3) == 0 {
			for range 1 + rng.IntN(2) {
				k := cands[FamilyChurn][rng.IntN(len(cands[FamilyChurn]))]
				if k == MemberJoin {
					continue // a late joiner's absence starts at 0, not in a burst
				}
				g.place(k, event+time.Duration(rng.Int64N(int64(s.HeartbeatInterval))), nil)
			}
		}
		if s.CoordinatorAware && len(cands[FamilyNode]) > 0 && len(g.out) < n && rng.IntN(2) == 0 {
			k := cands[FamilyNode][rng.IntN(len(cands[FamilyNode]))]
			g.place(k, event, func(f *Fault) { f.Node, f.Trigger = Coordinator, OnRebalance })
		}
	}
	sort.SliceStable(g.out, func(i, j int) bool { return g.out[i].At < g.out[j].At })
	return g.out, nil
}

type gen struct {
	s   Space
	rng *rand.Rand
	out []Fault
}

// place draws one fault of kind k (starting at at, or anywhere when at < 0)
// and adds it when it fits; mod, when set, adjusts the drawn fault first.
func (g *gen) place(k Kind, at time.Duration, mod func(*Fault)) (Fault, bool) {
	d := registry[k]
	lo, hi := d.durations(g.s)
	dur := lo + time.Duration(g.rng.Int64N(int64(hi-lo)+1))
	dur = min(dur, g.s.Horizon)
	f := Fault{Kind: k, For: dur}
	switch {
	case at < 0:
		f.At = time.Duration(g.rng.Int64N(int64(g.s.Horizon-dur) + 1))
	case at+dur > g.s.Horizon:
		return Fault{}, false
	default:
		f.At = at
	}
	d.draw(g.rng, g.s, &f)
	if mod != nil {
		mod(&f)
	}
	if f.At+f.For > g.s.Horizon || !fits(g.out, f, g.s) {
		return Fault{}, false
	}
	g.out = append(g.out, f)
	return f, true
}

func overlaps(a, b Fault) bool { return a.At < b.At+b.For && b.At < a.At+a.For }

// clash reports whether a and b act on one target, so must not overlap.
func clash(a, b Fault) bool {
	fa, fb := a.Family(), b.Family()
	switch {
	case fa == FamilyNode && fb == FamilyNode:
		// A fault on a role (the coordinator's node, a leader) may land on any node.
		return a.Node == b.Node || resolvedAtFault(a.Node) || resolvedAtFault(b.Node)
	case fa == FamilyLink && fb == FamilyLink:
		return a.Client == b.Client && (a.Node == b.Node || a.Node == AllNodes || b.Node == AllNodes)
	case fa == FamilyChurn && fb == FamilyChurn:
		return a.Member == b.Member
	case fa == FamilyChurn && fb == FamilyLink:
		return a.Member == b.Client // a crash cuts the member's links, a freeze holds them
	case fa == FamilyLink && fb == FamilyChurn:
		return a.Client == b.Member
	}
	return false
}

// fits reports whether f can join the schedule.
func fits(sched []Fault, f Fault, s Space) bool {
	bound := map[Family]int{FamilyNode: s.MaxNodesDown, FamilyChurn: s.MaxMembersAway}[f.Family()]
	// Check every instant where the count of f's family in force could
	// rise: the start of f and of every fault of its family starting in it.
	points := []time.Duration{f.At}
	for _, g := range sched {
		if !overlaps(f, g) {
			continue
		}
		if clash(f, g) {
			return false
		}
		if g.Family() == f.Family() && g.At > f.At {
			points = append(points, g.At)
		}
	}
	if bound == 0 {
		return true
	}
	for _, p := range points {
		n := 1
		for _, g := range sched {
			if g.Family() == f.Family() && g.At <= p && p < g.At+g.For {
				n++
			}
		}
		if n > bound {
			return false
		}
	}
	return true
}

// Active returns the faults of sched in force at time t.
func Active(sched []Fault, t time.Duration) []Fault {
	var out []Fault
	for _, f := range sched {
		if f.At <= t && t < f.At+f.For {
			out = append(out, f)
		}
	}
	return out
}

// Coverage is the fraction of [0, horizon) during which at least one fault
// of sched is in force, as planned.
func Coverage(sched []Fault, horizon time.Duration) float64 {
	if horizon <= 0 {
		return 0
	}
	type iv struct{ a, b time.Duration }
	var ivs []iv
	for _, f := range sched {
		ivs = append(ivs, iv{max(f.At, 0), min(f.At+f.For, horizon)})
	}
	sort.Slice(ivs, func(i, j int) bool { return ivs[i].a < ivs[j].a })
	var covered, end time.Duration
	for _, x := range ivs {
		if x.b <= end {
			continue
		}
		covered += x.b - max(x.a, end)
		end = x.b
	}
	return float64(covered) / float64(horizon)
}
