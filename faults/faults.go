// Package faults describes faults as values: what happens, to which node,
// client link or member, and when. A fault kind is one value (a Def) that
// knows where it fits, how it is drawn, how it is applied and healed and
// what effect it reports, the shape of etcd's failpoints: adding a kind is
// one file and its tests (node.go, link.go, churn.go hold today's kinds).
//
// A cluster implements Target, a client's links implement Link and the
// harness's workload implements Members; Env bundles them for one run. At the
// end of every schedule the harness heals everything before the final
// observations. This package never imports the harness, so a fault plan can
// be built, saved and read without any cluster.
package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// NodeID is a Kafka node.id.
type NodeID = int32

// AllNodes selects every link of a client.
const AllNodes NodeID = -1

// Coordinator, as a node fault's Node, selects the node that leads the
// group's __consumer_offsets partition (the group coordinator) at the moment
// the fault starts; the harness resolves it then and records which node it
// was.
const Coordinator NodeID = -2

// ShareCoordinator, as a node fault's Node, selects the node that leads the
// __share_group_state partition holding the share group's state of workload
// partition Fault.Partition (the share coordinator of that share-partition,
// KIP-932) at the moment the fault starts.
const ShareCoordinator NodeID = -3

// PartitionLeader, as a node fault's Node, selects the leader of workload
// partition Fault.Partition at the moment the fault starts: for a share
// group, the share-partition leader, which holds the acquisition locks and
// delivery counts of that partition's records.
const PartitionLeader NodeID = -4

// resolvedAtFault reports whether node names a role the harness resolves
// when the fault starts, not a fixed node.
func resolvedAtFault(node NodeID) bool {
	return node == Coordinator || node == ShareCoordinator || node == PartitionLeader
}

// Target is what node faults act on: the nodes of a cluster. Each method
// returns only when the action took effect (a stopped node has exited, a
// started one serves, an isolated one is unreachable).
type Target interface {
	NodeIDs() []NodeID
	StopNode(ctx context.Context, id NodeID) error
	StartNode(ctx context.Context, id NodeID) error
	KillNode(ctx context.Context, id NodeID) error
	PauseNode(ctx context.Context, id NodeID) error
	UnpauseNode(ctx context.Context, id NodeID) error
	IsolateNode(ctx context.Context, id NodeID) error
	HealNode(ctx context.Context, id NodeID) error
}

// Link is one client's path to the brokers, faulted without touching any
// other client.
type Link interface {
	Cut(node NodeID) error
	Latency(node NodeID, d, jitter time.Duration) error
	Bandwidth(node NodeID, kbPerSec int64) error
	Blackhole(node NodeID) error
	ResetPeer(node NodeID, after time.Duration) error
	Heal(node NodeID) error
}

// LinkOf returns a client's links; the harness supplies it.
type LinkOf func(client string) (Link, error)

// Members is what churn faults act on: the group's members as the
// workload runs them. Each method returns once the change took effect on
// the member's side (a left member has sent its leave, a crashed one can no
// longer reach any broker) and says what it saw.
type Members interface {
	// Join starts a member that has not run yet (a late joiner).
	Join(ctx context.Context, name string) (string, error)
	// Leave stops a member cleanly: it commits what it consumed and leaves
	// the group.
	Leave(ctx context.Context, name string) (string, error)
	// Crash stops a member without leaving: its connections are cut first,
	// so nothing more of it reaches Kafka, and its session must expire.
	Crash(ctx context.Context, name string) (string, error)
	// Stall stops the member's application from polling (its heartbeats go
	// on, so only the poll interval can remove it); with freeze, its links
	// hold every byte as well, like a process stopped by a long GC pause.
	Stall(ctx context.Context, name string, freeze bool, d time.Duration) (string, error)
	// Restore brings a member back to running: a stopped one is started
	// anew (a new member id; a static member keeps its instance id), a
	// stalled one resumes. It is the heal of every churn fault.
	Restore(ctx context.Context, name string) (string, error)
}

// Group is what coordinator-aware faults ask about the group under test.
type Group interface {
	// Coordinator is the node that coordinates the group now.
	Coordinator(ctx context.Context) (NodeID, error)
	// Rebalancing reports whether a rebalance is in progress now: some
	// partition has no owner or more than one, as the members see it.
	Rebalancing() bool
}

// Leaders is what faults on the leader of a partition ask: which node leads
// a workload partition now, and which leads the share coordinator's
// __share_group_state partition for it. A share run implements it.
type Leaders interface {
	PartitionLeader(ctx context.Context, partition int32) (NodeID, error)
	ShareCoordinator(ctx context.Context, partition int32) (NodeID, error)
}

// Env is everything faults act on in one run. A nil part means the run
// cannot do that family of faults (an external cluster without node
// control has no Target).
type Env struct {
	Target  Target
	Links   LinkOf
	Members Members
	Group   Group
	Leaders Leaders
	// Edges, when set, is told of each change a fault makes to its target
	// again and again while it is in force (LinkFlap: each cut and each
	// restore of the link), once the change took effect, so the harness
	// can record when the target was really hurt. A fault that acts once at
	// its start and once at its heal does not call it. It is called one
	// edge at a time and in order: the first by Apply before it returns,
	// the next ones from the fault's own goroutine, the last by Heal; it
	// must return quickly.
	Edges func(Edge)
}

// Kind names what a fault does; it is what plans save.
type Kind string

// Family groups kinds by what they act on.
type Family string

const (
	FamilyNode  Family = "node"  // a broker node
	FamilyLink  Family = "link"  // one client's links
	FamilyChurn Family = "churn" // a member's life: joins, leaves, crashes, stalls
	// FamilyUpgrade holds the steps of a rolling upgrade (upgrade.go):
	// placed by an upgrade's plan, never drawn, and left out of Kinds.
	FamilyUpgrade Family = "upgrade"
)

// Trigger says what starts a fault besides the clock.
type Trigger string

const (
	// AtTime starts the fault at its At.
	AtTime Trigger = ""
	// OnRebalance starts the fault at its At or later, as soon as a
	// rebalance is in progress (bounded by RebalanceWait; past it the fault
	// starts anyway and the history says the trigger was not met).
	OnRebalance Trigger = "rebalance"
)

// RebalanceWait bounds how long an OnRebalance fault waits for a rebalance.
const RebalanceWait = 10 * time.Second

// Fault is one fault of a schedule: a plain value, saved in the plan.
type Fault struct {
	Kind Kind `json:"kind"`
	// Node is the node a node fault acts on (Coordinator: the group
	// coordinator's node when the fault starts; ShareCoordinator and
	// PartitionLeader: the node in that role for Partition then), or the
	// broker a link fault cuts the client from (AllNodes for every broker).
	Node NodeID `json:"node"`
	// Partition is the workload partition whose leader or share
	// coordinator a node fault on PartitionLeader or ShareCoordinator hits.
	Partition int32 `json:"partition,omitempty"`
	// Client names the client whose links a link fault acts on.
	Client string `json:"client,omitempty"`
	// Member names the member a churn fault acts on.
	Member string `json:"member,omitempty"`
	// At is when the fault starts, from the start of the workload phase.
	At time.Duration `json:"at"`
	// For is how long it lasts before it is healed; 0 lasts until the final heal.
	For time.Duration `json:"for"`
	// Trigger, when set, delays the start past At until the condition holds.
	Trigger Trigger `json:"trigger,omitempty"`
	// Latency, Jitter and KBPerSec parameterise link faults.
	Latency  time.Duration `json:"latency,omitempty"`
	Jitter   time.Duration `json:"jitter,omitempty"`
	KBPerSec int64         `json:"kb_per_sec,omitempty"`
	// FlapDown and FlapUp are a flapping link's rhythm (LinkFlap): how
	// long each cut lasts and how long the link is up between two cuts.
	FlapDown time.Duration `json:"flap_down,omitempty"`
	FlapUp   time.Duration `json:"flap_up,omitempty"`
	// Version is the Kafka release a node upgrade installs.
	Version string `json:"version,omitempty"`
	// With is the member a replacement brings in (MemberReplace).
	With string `json:"with,omitempty"`
	// Features are the levels a feature update finalizes, as
	// FormatFeatures writes them ("group.version=1,metadata.version=33"): a
	// string, so that a Fault stays a comparable value.
	Features string `json:"features,omitempty"`
}

func (f Fault) target() string {
	switch {
	case f.Member != "" && f.With != "":
		return f.Member + " by " + f.With
	case f.Member != "":
		return f.Member
	case f.Client != "" && f.Node == AllNodes:
		return f.Client + "→all brokers"
	case f.Client != "":
		return fmt.Sprintf("%s→node %d", f.Client, f.Node)
	case f.Node == Coordinator:
		return "the coordinator's node"
	case f.Node == ShareCoordinator:
		return fmt.Sprintf("the share coordinator's node of partition %d", f.Partition)
	case f.Node == PartitionLeader:
		return fmt.Sprintf("the leader of partition %d", f.Partition)
	case f.Kind == FeatureUpdate:
		return "the cluster's features " + f.Features
	case f.Version != "":
		return fmt.Sprintf("node %d to Kafka %s", f.Node, f.Version)
	}
	return fmt.Sprintf("node %d", f.Node)
}

// notParams are the fields of a Fault that say what it is, what it acts
// on and when it starts, by their names in the plan: Params leaves them out.
var notParams = map[string]bool{"kind": true, "node": true, "partition": true, "client": true, "member": true, "at": true}

// Params are f's parameters as text, keyed by their names in the plan: every
// field of Fault set in f but its kind, target and start (durations as
// "1.5s"). The history records them beside the fault's target, so a field
// a new kind adds to Fault is recorded without an edit elsewhere; nil when
// f has none.
func (f Fault) Params() map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(f)
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		x := v.Field(i)
		if notParams[name] || x.IsZero() {
			continue
		}
		if d, ok := x.Interface().(time.Duration); ok {
			out[name] = d.String()
		} else {
			out[name] = fmt.Sprint(x.Interface())
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (f Fault) String() string {
	s := fmt.Sprintf("%s %s at %s for %s", f.Kind, f.target(), f.At, f.For)
	if f.Trigger != AtTime {
		s += " on " + string(f.Trigger)
	}
	return s
}

// Def is one fault kind: where it fits, how it is drawn, applied and
// healed. The kinds are the values in node.go, link.go and churn.go.
type Def interface {
	Kind() Kind
	Family() Family
	// Doc says what the kind does, for plans and -h.
	Doc() string
	// unfit says why the kind cannot be drawn from s, "" when it can.
	unfit(s Space) string
	// draw fills in f's target and parameters from rng (f.At and f.For
	// are set by the schedule); durations is the range For is drawn from.
	draw(rng *rand.Rand, s Space, f *Fault)
	// durations is the range of For for this kind in s.
	durations(s Space) (lo, hi time.Duration)
	validate(f Fault) error
	// Apply starts f and says what it saw; Heal undoes it.
	Apply(ctx context.Context, env Env, f Fault) (string, error)
	Heal(ctx context.Context, env Env, f Fault) (string, error)
}

var registry = map[Kind]Def{}

// registered are the kinds in the order their files register them: the
// order InScenarios lists them in, which a seed's draws depend on.
var registered []Kind

// register adds a kind; each kind's file calls it once.
func register(d Def) Def {
	if _, dup := registry[d.Kind()]; dup {
		panic("faults: kind registered twice: " + string(d.Kind()))
	}
	registry[d.Kind()] = d
	registered = append(registered, d.Kind())
	return d
}

// EndsSessions reports whether a fault of kind k on a member may close its
// connections, so end its share sessions (the broker releases what it
// holds), without a call of its own showing it: a crash or restart (the
// process's connections close when it dies or at the heal), a leave, and a
// cut, reset or black-holed link. A stall, a freeze (its links only
// slowed) and a slow link keep the connections open: a request they make
// time out shows in the history as a call without an answer. A kind says
// it in its own value; node faults act on every member and are not asked.
func EndsSessions(k Kind) bool {
	e, ok := registry[k].(interface{ endsSessions() bool })
	return ok && e.endsSessions()
}

// StartsAnew reports whether a fault of kind k on a member ends its process
// or its membership and starts a new one at the heal: a leave, a crash, a
// restart. What the member consumed, committed or was given before belongs
// to the old incarnation. A kind says so in its own value.
func StartsAnew(k Kind) bool {
	e, ok := registry[k].(interface{ startsAnew() bool })
	return ok && e.startsAnew()
}

// InScenarios lists the node or link kinds the fault scenarios draw (as
// their family), in the order their file registers them. A kind says in
// its own value whether the scenarios draw it; one they do not (today
// link-bandwidth and node-isolate) is drawn only where --faults names it.
// Every churn kind is drawn: see KindsOf.
func InScenarios(fam Family) []Kind {
	var out []Kind
	for _, k := range registered {
		d := registry[k]
		if x, ok := d.(interface{ inScenarios() bool }); ok && d.Family() == fam && x.inScenarios() {
			out = append(out, k)
		}
	}
	return out
}

// Lookup returns the definition of kind k.
func Lookup(k Kind) (Def, bool) {
	d, ok := registry[k]
	return d, ok
}

// Kinds lists every fault kind a schedule may draw, sorted by family then
// name: the upgrade and migration steps are placed by a plan (see Planned)
// and are not among them.
func Kinds() []Kind {
	return slices.DeleteFunc(allKinds(), func(k Kind) bool { return planned(registry[k].Family()) })
}

// planned reports whether the kinds of fam are placed by a plan (an
// upgrade's, a migration's) instead of drawn.
func planned(fam Family) bool { return fam == FamilyUpgrade || fam == FamilyMigration }

// Planned reports whether f is a step a plan placed (a rolling upgrade's, a
// protocol migration's), never drawn: the workload lasts until such steps
// have all ended.
func (f Fault) Planned() bool { return planned(f.Family()) }

// allKinds lists every registered kind, sorted by family then name.
func allKinds() []Kind {
	var out []Kind
	for k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		fi, fj := registry[out[i]].Family(), registry[out[j]].Family()
		if fi != fj {
			return fi < fj
		}
		return out[i] < out[j]
	})
	return out
}

// KindsOf lists the kinds of one family.
func KindsOf(fam Family) []Kind {
	return slices.DeleteFunc(allKinds(), func(k Kind) bool { return registry[k].Family() != fam })
}

// ParseKinds reads a comma-separated list of kind names and family names
// ("node", "link", "churn" stand for every kind of the family).
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		switch fam := Family(w); fam {
		case FamilyNode, FamilyLink, FamilyChurn:
			out = append(out, KindsOf(fam)...)
			continue
		}
		if !Kind(w).Known() {
			return nil, fmt.Errorf("unknown fault kind %q: known kinds are %s (or a family: node, link, churn)", w, kindList())
		}
		if registry[Kind(w)].Family() == FamilyUpgrade {
			return nil, fmt.Errorf("%s is a step of a rolling upgrade, not a fault a schedule draws: use groupquake upgrade --from V --to W (or run --upgrade-to W)", w)
		}
		if registry[Kind(w)].Family() == FamilyMigration {
			return nil, fmt.Errorf("%s is a step of an online protocol migration, not a fault a schedule draws: use groupquake run --scenario migration", w)
		}
		out = append(out, Kind(w))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fault kind in %q: name kinds (%s) or families (node, link, churn)", s, kindList())
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// Known reports whether k is a fault kind.
func (k Kind) Known() bool {
	_, ok := registry[k]
	return ok
}

// Family is the family of f's kind ("" for an unknown kind).
func (f Fault) Family() Family {
	if d, ok := registry[f.Kind]; ok {
		return d.Family()
	}
	return ""
}

// IsLinkFault reports whether f acts on a client's links.
func (f Fault) IsLinkFault() bool { return f.Family() == FamilyLink }

// HoldsNode reports whether f takes a node out of service or changes the
// cluster under the group (node faults and upgrade steps): such faults are
// carried out one at a time, so a 3-node quorum never loses two nodes.
func (f Fault) HoldsNode() bool {
	fam := f.Family()
	return fam == FamilyNode || fam == FamilyUpgrade
}

// Validate says what is wrong with f, if anything.
func (f Fault) Validate() error {
	d, ok := registry[f.Kind]
	if !ok {
		return fmt.Errorf("unknown fault kind %q: known kinds are %s", f.Kind, kindList())
	}
	if f.At < 0 || f.For < 0 {
		return fmt.Errorf("fault %s: at and for must not be negative (at %s, for %s)", f.Kind, f.At, f.For)
	}
	switch f.Trigger {
	case AtTime, OnRebalance:
	default:
		return fmt.Errorf("fault %s: unknown trigger %q (known: %q)", f.Kind, f.Trigger, OnRebalance)
	}
	return d.validate(f)
}

// Apply starts f in env and says what it saw.
func Apply(ctx context.Context, f Fault, env Env) (string, error) {
	if err := f.Validate(); err != nil {
		return "", err
	}
	return registry[f.Kind].Apply(ctx, env, f)
}

// Heal undoes f in env: a stopped or killed node is started, a paused one
// unpaused, an isolated one reconnected, a client's links healed, a member
// brought back to running.
func Heal(ctx context.Context, f Fault, env Env) (string, error) {
	if err := f.Validate(); err != nil {
		return "", err
	}
	return registry[f.Kind].Heal(ctx, env, f)
}

// errNoPart says that env lacks what a family needs.
func errNoPart(f Fault, what string) error {
	return fmt.Errorf("fault %s needs %s, which this run does not have", f, what)
}
