package run

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
)

// PlanFormat is the newest version of plan.json's layout this groupquake
// reads; a reader refuses a newer one. A plan is written in the oldest
// format that holds it (Plan.MarshalJSON): format 1, unless it is saved
// (Saved, added in format 2: a reader of format 1 would carry the plan out
// as its seed's, ignoring it), so an ordinary plan stays readable by a
// groupquake that knows format 1 only.
const PlanFormat = 2

// planFormatUnsaved is the format of a plan without Saved.
const planFormatUnsaved = 1

// MarshalJSON writes the plan with the format that holds it (PlanFormat).
func (p Plan) MarshalJSON() ([]byte, error) {
	type plain Plan // without this method
	q := plain(p)
	q.Format = planFormatUnsaved
	if p.Saved != nil {
		q.Format = PlanFormat
	}
	return json.Marshal(q)
}

// Scenarios a plan can be built for. A scenario decides which faults the
// schedule may hold; the seed decides everything else.
const (
	// ScenarioBaseline has no faults: the group forms, consumes and commits,
	// and every checker must hold. It is the control every other run is read
	// against.
	ScenarioBaseline = "baseline"
	// ScenarioMemberLinks cuts or slows single members' links (toxiproxy), long
	// enough at times for their session to expire, so the group rebalances
	// around a member that is fenced and comes back.
	ScenarioMemberLinks = "member-links"
	// ScenarioBrokerFaults stops, kills or pauses brokers (never more than a
	// quorum can lose), half of the time the group coordinator's node, at
	// times just as a rebalance is in flight, so the coordinator fails over
	// or restarts and commits must survive it (container clusters only).
	ScenarioBrokerFaults = "broker-faults"
	// ScenarioChurn changes the membership while the group works: late
	// joins, clean leaves, crashes that only a session expiry ends, quick
	// restarts (static members keep their instance id), members that stop
	// polling or freeze, some of them in bursts.
	ScenarioChurn = "churn"
	// ScenarioCombined draws from every family at once, overlapping: churn
	// during a node fault, a link fault on one member while the coordinator
	// moves, coordinator faults started by a churn event's rebalance.
	ScenarioCombined = "combined"
	// ScenarioMigration migrates the live group online from the classic
	// protocol to the consumer protocol and back, one member at a time,
	// under the broker's group.consumer.migration.policy
	// (Options.MigrationPolicy); see migration.go.
	ScenarioMigration = "migration"
)

// A Scenario is a family of faults a plan can be built for: its name, what
// it does in a sentence (`run -h` prints it), and how it shapes the fault
// space the seed draws from. A new scenario is one entry in scenarioList.
type Scenario struct {
	Name  string
	About string
	// space sets the kinds the schedule may draw (nil: no faults of the
	// nemesis). nodes grants node faults, refusing where nodes cannot be
	// controlled; external says the cluster is reached by --bootstrap.
	space func(s *faults.Space, t Timers, nodes func() error, external bool) error
}

// linkKinds are the faults of a single member's links the scenarios draw:
// each link kind says in faults whether they do.
var linkKinds = faults.InScenarios(faults.FamilyLink)

// nodeKinds are the faults of brokers the scenarios draw.
var nodeKinds = faults.InScenarios(faults.FamilyNode)

var scenarioList = []Scenario{
	{ScenarioBaseline, "no faults: the group forms, consumes and commits; the control every other run is read against", nil},
	{ScenarioMemberLinks, "cuts, slows, blackholes or resets single members' links, at times long enough for a session to expire",
		func(s *faults.Space, _ Timers, _ func() error, _ bool) error {
			s.Kinds = slices.Clone(linkKinds)
			return nil
		}},
	{ScenarioBrokerFaults, "stops, kills or pauses brokers (never more than a quorum can lose), often the group coordinator's node",
		func(s *faults.Space, t Timers, nodes func() error, _ bool) error {
			if err := nodes(); err != nil {
				return err
			}
			// Long enough for a coordinator move and a session expiry,
			// short enough to leave the workload time to catch up.
			s.MaxDuration = t.SessionTimeout * 2
			s.Kinds = slices.Clone(nodeKinds)
			return nil
		}},
	{ScenarioChurn, "changes the membership while the group works: joins, leaves, crashes, quick restarts, stalls and freezes",
		func(s *faults.Space, _ Timers, _ func() error, _ bool) error {
			s.Kinds = faults.KindsOf(faults.FamilyChurn)
			return nil
		}},
	{ScenarioCombined, "draws from every family at once, overlapping: churn during a node fault, a link fault while the coordinator moves",
		func(s *faults.Space, _ Timers, nodes func() error, external bool) error {
			if !external {
				if err := nodes(); err != nil {
					return err
				}
			}
			s.Kinds = append(faults.KindsOf(faults.FamilyChurn), linkKinds...)
			if len(s.Nodes) > 0 {
				s.Kinds = append(s.Kinds, nodeKinds...)
			}
			return nil
		}},
	{ScenarioMigration, "moves the live group between the classic and the consumer protocol one member at a time, and back", nil},
}

// ScenarioList returns every scenario, in the order `run -h` lists them.
func ScenarioList() []Scenario { return slices.Clone(scenarioList) }

func scenarioNamed(name string) (Scenario, bool) {
	for _, sc := range scenarioList {
		if sc.Name == name {
			return sc, true
		}
	}
	return Scenario{}, false
}

// Scenarios returns the scenario names NewPlan accepts.
func Scenarios() []string {
	var names []string
	for _, sc := range scenarioList {
		names = append(names, sc.Name)
	}
	return names
}

// Options are what the user fixes about a plan; the seed chooses the rest.
// They are saved in the plan, so the rerun command can be rebuilt from it.
type Options struct {
	// Scenario is one of Scenarios(); empty means ScenarioBaseline.
	Scenario string `json:"scenario"`
	// Kafka is the broker version of a container cluster.
	Kafka string `json:"kafka,omitempty"`
	// KafkaClients is the kafka-clients version of the Java member kinds;
	// empty means Kafka's (or the default version).
	KafkaClients string `json:"kafka_clients,omitempty"`
	// JavaJVMs is how the Java members' JVMs are laid out: kinds.JavaJVMsPerMember
	// (empty, the default: one JVM each, a crash kills it) or kinds.JavaJVMsShared
	// (one JVM hosts every Java member of a kafka-clients version; faults
	// are emulated per member, see clients/java.Host).
	JavaJVMs string `json:"java_jvms,omitempty"`
	// ProcessKinds are member kinds the user defined (--process-kind
	// NAME=PROTOCOL:COMMAND): processes speaking the member protocol,
	// kept here so that the rerun command defines them again.
	ProcessKinds map[string]kinds.UserKind `json:"process_kinds,omitempty"`
	// Nodes and Controllers size a container cluster (1 or 3 nodes; 0, 1 or 3
	// separate controllers).
	Nodes       int `json:"nodes,omitempty"`
	Controllers int `json:"controllers,omitempty"`
	// Bootstrap, when set, points the run at an external cluster.
	Bootstrap []string `json:"bootstrap,omitempty"`
	// Embedded runs against the reference coordinator served in this
	// process (cluster.StartEmbedded): one node, no Docker, no Java.
	Embedded bool `json:"embedded,omitempty"`
	// Kinds lists the member kinds (names in the Registry), cycled over the
	// members; empty lets the seed choose each member's kind.
	Kinds []string `json:"kinds,omitempty"`
	// Members is the number of members; 0 means len(Kinds), or a number from
	// 2 to 4 chosen by the seed when Kinds is empty too.
	Members int `json:"members,omitempty"`
	// Records caps how many records the producers write (0: no cap, produce
	// for the whole workload phase).
	Records int `json:"records,omitempty"`
	// Topic and Group override the names derived from the seed (a rerun
	// against an external cluster needs fresh ones).
	Topic string `json:"topic,omitempty"`
	Group string `json:"group,omitempty"`
	// Partitions of the workload topic; 0 lets the seed choose 3 to 8.
	Partitions int32 `json:"partitions,omitempty"`
	// Duration of the workload phase; 0 means 20s.
	Duration time.Duration `json:"duration,omitempty"`
	// Rate is records per second over all partitions; 0 lets the seed choose
	// 20 to 60.
	Rate int `json:"rate,omitempty"`
	// Faults lists the fault kinds the schedule may draw (empty: the
	// scenario's); every kind must fit the cluster and the group.
	Faults []faults.Kind `json:"faults,omitempty"`
	// Intensity is how many faults a minute the schedule draws: "low",
	// "normal" (the default) or "high", or a rate ("12/min").
	Intensity string `json:"intensity,omitempty"`
	// UpgradeTo, when set, rolls the container cluster from Kafka to this
	// newer release while the group works: every node replaced in turn on
	// its data, then the features finalized (upgrade.go). The steps are on
	// the schedule beside the scenario's faults.
	UpgradeTo string `json:"upgrade_to,omitempty"`
	// Downgrade, with UpgradeTo, rolls the binaries back to Kafka after
	// the upgrade: DowngradeBeforeFinalize or DowngradeAfterFinalize.
	Downgrade string `json:"downgrade,omitempty"`
	// MigrationPolicy is the broker's group.consumer.migration.policy
	// (bidirectional, upgrade, downgrade, disabled; empty: Kafka's
	// default, bidirectional), set on the clusters the run starts itself.
	MigrationPolicy string `json:"migration_policy,omitempty"`
	// MigrationFrom is the protocol a migration's group starts with and
	// returns to: classic (empty: classic → consumer → classic) or
	// consumer (consumer → classic → consumer).
	MigrationFrom string `json:"migration_from,omitempty"`
	// MigrationStatic makes a migration's members static and each
	// replacement the rolling bounce of one: the member leaves as a static
	// member does (a classic one sends no LeaveGroup, a consumer-protocol
	// one leaves with epoch -2) and comes back under the same
	// group.instance.id in the other protocol (migration.go).
	MigrationStatic bool `json:"migration_static,omitempty"`
	// NoSupervisor turns the members' supervisor off (Plan.Supervisor):
	// a member that stops for good stays stopped, as in runs made before
	// the supervisor existed.
	NoSupervisor bool `json:"no_supervisor,omitempty"`
}

// Plan is plan.json: everything a run will do, chosen from the seed before
// any IO, so the seed reproduces it (the interleaving is not reproduced; the
// history records it).
type Plan struct {
	Format  int     `json:"format"`
	Seed    uint64  `json:"seed"`
	Options Options `json:"options"`
	// Group and Topics are what the members join and consume.
	Group  string              `json:"group"`
	Topics []history.TopicPlan `json:"topics"`
	// Members in the order they start.
	Members   []MemberPlan   `json:"members"`
	Producers []ProducerPlan `json:"producers"`
	Timers    Timers         `json:"timers"`
	// Phase lengths and bounds.
	WarmupMax    time.Duration `json:"warmup_max"`
	Workload     time.Duration `json:"workload"`
	QuiesceMax   time.Duration `json:"quiesce_max"`
	ObserveEvery time.Duration `json:"observe_every"`
	// Faults is the nemesis's schedule; At counts from the start of the
	// workload phase, and every fault is healed at the latest in the heal
	// phase.
	Faults []faults.Fault `json:"faults"`
	// Supervisor restarts the members that stop for good (supervisor.go).
	// nil in a plan written before it existed: nothing restarts them, and
	// the run is carried out and judged as it was then.
	Supervisor *Supervisor `json:"supervisor,omitempty"`
	// Share, for a share group's run (share_run.go), is the cluster's
	// share settings the share checkers judge by; nil when unknown (an
	// external cluster).
	Share *history.SharePlan `json:"share,omitempty"`
	// Saved, when set, says the plan is carried out from a plan file, not
	// rebuilt from its seed: its Faults may not be what the seed draws
	// (groupquake shrink kept a subset of them, or the file was edited).
	// Its rerun command is groupquake run --plan with that file (Args).
	Saved *SavedPlan `json:"saved,omitempty"`
}

// SavedPlan is the plan file that reruns a plan, and where the plan came
// from.
type SavedPlan struct {
	// File is the plan file: groupquake run --plan File.
	File string `json:"file"`
	// ShrunkFrom is the run directory whose plan groupquake shrink
	// reduced to this one, keeping the faults of that plan at the indexes
	// (from 0) Kept. Only shrink's trials have it (run --plan leaves it
	// out of a rerun's plan): the commands that read a folder of runs
	// leave the trials out by it.
	ShrunkFrom string `json:"shrunk_from,omitempty"`
	Kept       []int  `json:"kept,omitempty"`
}

// Supervisor is what runs a member's process in production (systemd,
// Kubernetes, a process manager): when the member stops for good on its
// own (its consumer threw a fatal error, the application closed it and
// exited), the supervisor starts a new process, a new member with the
// same group.instance.id if static, after a backoff that doubles with each
// restart that did not get the member back into the group, up to
// BackoffMax, until it is taken in or the run ends.
type Supervisor struct {
	// Restart turns the supervisor on (the default of a new plan).
	Restart bool `json:"restart"`
	// BackoffInitial is the wait before the first restart after the member
	// was last taken into the group; each further attempt doubles it, up to
	// BackoffMax.
	BackoffInitial time.Duration `json:"backoff_initial"`
	BackoffMax     time.Duration `json:"backoff_max"`
}

// DefaultSupervisor restarts after 1 s, 2 s, 4 s, then every 8 s: a
// crashed static consumer-protocol member refused UNRELEASED_INSTANCE_ID
// until its old session (6 s here) expires is back after a few attempts, as
// a pod under Kubernetes' CrashLoopBackOff is after Kafka's 45 s default
// session, with the harness's shorter timers.
func DefaultSupervisor() *Supervisor {
	return &Supervisor{Restart: true, BackoffInitial: time.Second, BackoffMax: 8 * time.Second}
}

// On reports whether the supervisor restarts members (false for a nil one).
func (s *Supervisor) On() bool { return s != nil && s.Restart }

// Backoff is the wait before restart attempt n (1 for the first).
func (s *Supervisor) Backoff(n int) time.Duration {
	b := s.BackoffInitial
	for i := 1; i < n && b < s.BackoffMax; i++ {
		b *= 2
	}
	return min(b, s.BackoffMax)
}

// MaxBackoff is the longest wait between two restarts (0 when off).
func (s *Supervisor) MaxBackoff() time.Duration {
	if !s.On() {
		return 0
	}
	return s.BackoffMax
}

// MemberPlan is one member's script.
type MemberPlan struct {
	Name string `json:"name"`
	// Kind names the member implementation in the Registry ("kgo-classic").
	Kind string `json:"kind"`
	// Protocol is the kind's group protocol, "classic" or "consumer".
	Protocol string `json:"protocol"`
	// JoinAfter staggers the start inside the warm-up, so joins race the
	// way they do in a rolling deploy.
	JoinAfter time.Duration `json:"join_after"`
	// CommitEvery is how often the member commits what it consumed.
	CommitEvery time.Duration `json:"commit_every"`
	// InstanceID, when set, makes the member static (KIP-345): it keeps
	// this group.instance.id across restarts.
	InstanceID string `json:"instance_id,omitempty"`
}

// ProducerPlan is one producer.
type ProducerPlan struct {
	Name string `json:"name"`
	// Rate is records per second, spread round-robin over every partition
	// (or over Partitions).
	Rate int `json:"rate"`
	// Partitions, when set, are the only partitions of the workload topics
	// the producer writes (a share run has one producer per partition, so a
	// send waiting for a new leader holds no other partition back).
	Partitions []int32 `json:"partitions,omitempty"`
}

// Timers are the group timers the run sets and the checkers bound
// convergence with. For consumer-protocol members the session timeout and
// heartbeat interval are the broker's (group.consumer.session.timeout.ms and
// group.consumer.heartbeat.interval.ms of cluster.FastGroupSettings).
type Timers struct {
	SessionTimeout    time.Duration `json:"session_timeout"`
	HeartbeatInterval time.Duration `json:"heartbeat_interval"`
	RebalanceTimeout  time.Duration `json:"rebalance_timeout"`
	// PollInterval is max.poll.interval.ms: a member that does not poll for
	// this long gives up its partitions. It outlasts the driver's longest
	// commit, so only a stall can exceed it. Members whose client has no
	// such timer (kgo's) ignore it.
	PollInterval time.Duration `json:"poll_interval,omitempty"`
	// ConvergenceSlack covers what the timers do not: coordinator load,
	// kgo's backoffs, a loaded 2-core machine.
	ConvergenceSlack time.Duration `json:"convergence_slack"`
}

// stream returns the random stream of one concern of the plan. Each concern
// has its own PCG stream derived from the seed and the concern's name, so a
// choice made in one concern (the partition count) does not shift the draws
// of another (the members' scripts, the fault schedule).
func stream(seed uint64, concern string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(concern))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// NewPlan builds the plan for seed. kinds is the registry's view of member
// kinds (name → protocol), used to choose and validate members.
func NewPlan(seed uint64, o Options, kinds map[string]string) (Plan, error) {
	if err := settleClusterOptions(&o); err != nil {
		return Plan{}, err
	}
	legSize, err := settleWorkloadOptions(&o, kinds)
	if err != nil {
		return Plan{}, err
	}
	known, err := knownKinds(o, kinds)
	if err != nil {
		return Plan{}, err
	}
	p := basePlan(seed, o)
	if err := p.chooseMembers(known, kinds, legSize); err != nil {
		return Plan{}, err
	}
	if p.IsShare() {
		shapeShare(&p) // share_run.go
	}
	if err := p.scheduleFaults(legSize); err != nil {
		return Plan{}, err
	}
	if err := checkSharePlan(&p); err != nil { // share_run.go
		return Plan{}, err
	}
	return p, p.Validate()
}

// settleClusterOptions checks the scenario and the cluster's options and
// fills in their defaults.
func settleClusterOptions(o *Options) error {
	if o.Scenario == "" {
		o.Scenario = ScenarioBaseline
	}
	if !slices.Contains(Scenarios(), o.Scenario) {
		return fmt.Errorf("unknown scenario %q: known scenarios are %s", o.Scenario, strings.Join(Scenarios(), ", "))
	}
	if o.Embedded && len(o.Bootstrap) > 0 {
		return errors.New("--embedded and --bootstrap exclude each other: the embedded cluster runs in this process")
	}
	if o.Embedded && o.Nodes > 1 {
		return fmt.Errorf("the embedded cluster has one node, not %d", o.Nodes)
	}
	if len(o.Bootstrap) == 0 {
		if o.Nodes == 0 {
			o.Nodes = 1
		}
		if o.Nodes != 1 && o.Nodes != 3 {
			return fmt.Errorf("a container cluster has 1 or 3 nodes, not %d", o.Nodes)
		}
		if err := cluster.CheckControllers(o.Controllers); err != nil {
			return err
		}
		if o.Embedded && o.Controllers > 0 {
			return fmt.Errorf("the embedded cluster has no separate controllers, not %d", o.Controllers)
		}
		if o.Kafka == "" {
			// Pinned in the plan, so a rerun after the default moves still runs this version.
			o.Kafka = cluster.DefaultKafkaVersion
		}
	}
	if err := checkUpgrade(*o); err != nil {
		return err
	}
	if o.Duration == 0 && o.UpgradeTo != "" {
		o.Duration = upgradeWorkload(upgradeStepCount(*o, o.Nodes))
	}
	if err := checkMigrationPolicy(o.MigrationPolicy); err != nil {
		return err
	}
	switch o.JavaJVMs {
	case "", kinds.JavaJVMsPerMember:
		o.JavaJVMs = "" // the default, left out of plan.json and the rerun command
	case kinds.JavaJVMsShared:
		if !slices.ContainsFunc(o.Kinds, kinds.IsJavaKind) {
			return fmt.Errorf("--java-jvms %s lays out the Java members' JVMs, but no Java member kind is in --kinds (%s)", o.JavaJVMs, strings.Join(kinds.JavaKindNames(), ", "))
		}
	default:
		return fmt.Errorf("--java-jvms %q: want %s (one JVM per Java member, the default) or %s (one JVM hosts them all)", o.JavaJVMs, kinds.JavaJVMsPerMember, kinds.JavaJVMsShared)
	}
	return nil
}

// settleWorkloadOptions checks the migration options and the workload's
// sizes, fills in the workload's duration, and returns the size of a
// migration's leg (o.Members otherwise).
func settleWorkloadOptions(o *Options, kinds map[string]string) (legSize int, err error) {
	migration := o.Scenario == ScenarioMigration
	if err := checkMigrationFrom(o.MigrationFrom); err != nil {
		return 0, err
	}
	if o.MigrationFrom != "" && !migration {
		return 0, fmt.Errorf("--migration-from %s says where a migration starts: it needs --scenario %s", o.MigrationFrom, ScenarioMigration)
	}
	if o.MigrationStatic && !migration {
		return 0, fmt.Errorf("--migration-static makes a migration's members static: it needs --scenario %s", ScenarioMigration)
	}
	legSize = o.Members
	if migration {
		if o.UpgradeTo != "" {
			return 0, errors.New("--scenario migration and --upgrade-to are separate runs: migrate the group on one release")
		}
		if legSize == 0 {
			legSize = migrationMembers
		}
		if o.Duration == 0 {
			o.Duration = migrationWorkload(legSize)
		}
	}
	if o.Duration == 0 && shareOptions(*o, kinds) {
		o.Duration = shareWorkload(o.Scenario) // share_run.go
	}
	if o.Duration == 0 {
		o.Duration = 20 * time.Second
	}
	if o.Duration < 0 || o.Partitions < 0 || o.Rate < 0 || o.Members < 0 || o.Records < 0 {
		return 0, fmt.Errorf("duration, partitions, rate, members and records must not be negative (got %s, %d, %d, %d, %d)", o.Duration, o.Partitions, o.Rate, o.Members, o.Records)
	}
	return legSize, nil
}

// knownKinds returns the registry's kind names, sorted, after checking that
// every kind o asks for is one of them.
func knownKinds(o Options, kinds map[string]string) ([]string, error) {
	if len(kinds) == 0 {
		return nil, errors.New("no member kinds to choose from: pass the registry's kinds (kinds.Default().Kinds())")
	}
	known := slices.Sorted(maps.Keys(kinds))
	for _, k := range o.Kinds {
		if _, ok := kinds[k]; !ok {
			return nil, fmt.Errorf("unknown member kind %q: known kinds are %s", k, strings.Join(known, ", "))
		}
	}
	return known, nil
}

// basePlan is the plan of settled options before members and faults: the
// supervisor, the group, the workload and the timers.
func basePlan(seed uint64, o Options) Plan {
	sup := DefaultSupervisor()
	if o.NoSupervisor {
		sup.Restart = false
	}
	return Plan{
		Format:       planFormatUnsaved,
		Seed:         seed,
		Options:      o,
		Supervisor:   sup,
		Group:        fmt.Sprintf("gq-%d", seed),
		Workload:     o.Duration,
		WarmupMax:    90 * time.Second,
		ObserveEvery: 2 * time.Second,
		Timers: Timers{
			SessionTimeout:    6 * time.Second,
			HeartbeatInterval: 1 * time.Second,
			RebalanceTimeout:  15 * time.Second,
			PollInterval:      20 * time.Second,
			ConvergenceSlack:  20 * time.Second,
		},
	}
}

// chooseMembers draws the topic, the members (kinds, join delays, commit
// intervals, static ones) and the producer from the seed's streams;
// protocols maps each kind to its protocol.
func (p *Plan) chooseMembers(known []string, protocols map[string]string, legSize int) error {
	o, seed := p.Options, p.Seed
	migration := o.Scenario == ScenarioMigration
	topo := stream(seed, "topology")
	parts := o.Partitions
	if parts == 0 {
		parts = 3 + topo.Int32N(6)
	}
	topic := o.Topic
	if topic == "" {
		topic = fmt.Sprintf("gq-%d-records", seed)
	}
	if o.Group != "" {
		p.Group = o.Group
	}
	p.Topics = []history.TopicPlan{{Name: topic, Partitions: parts}}
	memberKinds := drawMemberKinds(o, topo, known)
	if migration {
		var err error
		if memberKinds, err = migrationLegs(o, protocols, legSize); err != nil {
			return err
		}
	}
	ms := stream(seed, "members")
	for i, k := range memberKinds {
		p.Members = append(p.Members, MemberPlan{
			Name:        "m" + strconv.Itoa(i+1),
			Kind:        k,
			Protocol:    protocols[k],
			JoinAfter:   time.Duration(ms.Int64N(int64(3 * time.Second))).Round(time.Millisecond),
			CommitEvery: time.Duration(200+ms.IntN(800)) * time.Millisecond,
		})
	}
	if migration && o.MigrationStatic {
		staticMigration(p, legSize)
	}
	if o.Scenario != ScenarioBaseline && !migration {
		// A third of the members are static under faults, so restarts and
		// crashes exercise KIP-345 (and KIP-848's static members) too.
		st := stream(seed, "static")
		for i := range p.Members {
			if st.IntN(3) == 0 && kinds.NoInstanceID(p.Members[i].Kind) == "" {
				p.Members[i].InstanceID = fmt.Sprintf("%s-%s", p.Group, p.Members[i].Name)
			}
		}
	}
	rate := o.Rate
	if rate == 0 {
		rate = 20 + stream(seed, "producers").IntN(41)
	}
	p.Producers = []ProducerPlan{{Name: "p0", Rate: rate}}
	// Quiesce must outlast a member that was cut off until the heal: its
	// session expires, the group rebalances, the new owners catch up.
	p.QuiesceMax = 2*(p.Timers.SessionTimeout+p.Timers.RebalanceTimeout) + 30*time.Second
	return nil
}

// drawMemberKinds is the members' kinds: o.Kinds in turn, or drawn from the
// known kinds when o names none.
func drawMemberKinds(o Options, topo *rand.Rand, known []string) []string {
	n := o.Members
	if n == 0 {
		n = len(o.Kinds)
	}
	if n == 0 {
		n = 2 + topo.IntN(3)
	}
	var memberKinds []string
	for i := range n {
		if len(o.Kinds) > 0 {
			memberKinds = append(memberKinds, o.Kinds[i%len(o.Kinds)])
		} else {
			memberKinds = append(memberKinds, known[topo.IntN(len(known))])
		}
	}
	return memberKinds
}

// migrationLegs is a migration's members' kinds: three legs of legSize,
// classic, consumer, classic again (or consumer, classic, consumer); each
// leg cycles over its protocol's kinds, the last one shifted so that a
// member is replaced by another kind than the first leg's.
func migrationLegs(o Options, kinds map[string]string, legSize int) ([]string, error) {
	cl, co, err := migrationMembersOf(o, kinds, legSize)
	if err != nil {
		return nil, err
	}
	if o.MigrationFrom == history.ProtocolConsumer {
		cl, co = co, cl
	}
	var memberKinds []string
	for i := range legSize {
		memberKinds = append(memberKinds, cl[i%len(cl)])
	}
	for i := range legSize {
		memberKinds = append(memberKinds, co[i%len(co)])
	}
	for i := range legSize {
		memberKinds = append(memberKinds, cl[(i+1)%len(cl)])
	}
	return memberKinds, nil
}

// scheduleFaults draws the scenario's faults and adds a migration's or an
// upgrade's steps, in time order.
func (p *Plan) scheduleFaults(legSize int) error {
	o := p.Options
	migration := o.Scenario == ScenarioMigration
	intensity, err := faults.ParseIntensity(o.Intensity)
	if err != nil {
		return err
	}
	space, err := faultSpace(*p)
	if err != nil {
		return err
	}
	if (o.Scenario != ScenarioBaseline && !migration) || len(o.Faults) > 0 {
		if p.Faults, err = faults.Generate(stream(p.Seed, "faults"), space, intensity.Count(p.Workload)); err != nil {
			return fmt.Errorf("scenario %s: %w", o.Scenario, err)
		}
	}
	if migration {
		steps, err := migrationSteps(*p, legSize)
		if err != nil {
			return err
		}
		p.Faults = append(p.Faults, steps...)
		slices.SortStableFunc(p.Faults, func(a, b faults.Fault) int { return cmp.Compare(a.At, b.At) })
	}
	if o.UpgradeTo != "" {
		steps, err := upgradeSteps(*p)
		if err != nil {
			return err
		}
		p.Faults = append(p.Faults, steps...)
		slices.SortStableFunc(p.Faults, func(a, b faults.Fault) int { return cmp.Compare(a.At, b.At) })
	}
	return nil
}

// faultSpace is what the scenario's faults may pick from (faults.Generate
// filters out what does not fit). Node ids are the container cluster's
// (brokers 1..Nodes, see harness/cluster); an external cluster's are not
// known before it is reached, so link faults there cut a client from every
// broker, and node faults are left out.
func faultSpace(p Plan) (faults.Space, error) {
	o := p.Options
	var brokers []faults.NodeID
	for i := range o.Nodes {
		brokers = append(brokers, faults.NodeID(i+1))
	}
	t := p.Timers
	s := faults.Space{
		Horizon: p.Workload, MinDuration: time.Second,
		// Up to 1.5 session timeouts: sometimes the session survives, sometimes not.
		MaxDuration:    t.SessionTimeout * 3 / 2,
		SessionTimeout: t.SessionTimeout, HeartbeatInterval: t.HeartbeatInterval, PollInterval: t.PollInterval,
		Brokers: brokers,
		// Never more nodes down than a quorum can lose.
		MaxNodesDown: max(1, (len(brokers)-1)/2),
	}
	if len(o.Bootstrap) > 0 {
		s.Brokers = []faults.NodeID{faults.AllNodes}
	}
	for _, m := range p.Members {
		s.Clients = append(s.Clients, m.Name)
		s.Members = append(s.Members, m.Name)
	}
	nodes := func() error {
		if len(o.Bootstrap) > 0 {
			return fmt.Errorf("scenario %s stops and pauses brokers: it needs a container cluster or the embedded one, not --bootstrap", o.Scenario)
		}
		s.Nodes, s.CoordinatorAware = brokers, true
		if o.Embedded {
			s.Nodes = []faults.NodeID{1}
		}
		return nil
	}
	if sc, ok := scenarioNamed(o.Scenario); ok && sc.space != nil {
		if err := sc.space(&s, t, nodes, len(o.Bootstrap) > 0); err != nil {
			return s, err
		}
	}
	if len(o.Faults) > 0 {
		// The user's list replaces the scenario's; node kinds need nodes.
		if slices.ContainsFunc(o.Faults, func(k faults.Kind) bool {
			d, ok := faults.Lookup(k)
			return ok && d.Family() == faults.FamilyNode
		}) && len(s.Nodes) == 0 {
			if err := nodes(); err != nil {
				return s, err
			}
		}
		s.Kinds = slices.Clone(o.Faults)
	}
	if p.IsShare() && len(s.Nodes) > 0 {
		// A share group's state lives in three roles a node fault may hit:
		// the group coordinator, a partition's share coordinator and a
		// partition's leader (the share-partition). A share group has no
		// rebalance for a fault to wait for.
		s.CoordinatorAware, s.ShareAware, s.Partitions = false, true, p.Topics[0].Partitions
	}
	return s, nil
}

// Validate says what is wrong with a plan read from disk or built by hand.
func (p Plan) Validate() error {
	switch {
	case p.Format > PlanFormat:
		return fmt.Errorf("plan format %d is newer than this groupquake reads (%d): use a newer groupquake", p.Format, PlanFormat)
	case p.Group == "":
		return errors.New("plan has no group")
	case len(p.Topics) == 0:
		return errors.New("plan has no topics")
	case len(p.Members) == 0:
		return errors.New("plan has no members")
	case p.Workload <= 0:
		return fmt.Errorf("plan has a workload of %s: it must be positive", p.Workload)
	}
	names := map[string]bool{}
	for _, m := range p.Members {
		if m.Name == "" || strings.ContainsAny(m.Name, "/ ") || names[m.Name] {
			return fmt.Errorf("member name %q must be unique, non-empty, without '/' or spaces", m.Name)
		}
		names[m.Name] = true
		if m.Protocol != history.ProtocolClassic && m.Protocol != history.ProtocolConsumer && m.Protocol != history.ProtocolShare {
			return fmt.Errorf("member %s (kind %s) has protocol %q, want classic, consumer or share", m.Name, m.Kind, m.Protocol)
		}
		if (m.Protocol == history.ProtocolShare) != p.IsShare() {
			return fmt.Errorf("member %s (kind %s) speaks %s, but the group is not a group of that type: share members and consumer-group members never share a group", m.Name, m.Kind, m.Protocol)
		}
	}
	if p.Saved != nil && p.Saved.File == "" {
		return errors.New("plan is saved (carried out from a plan file) but names no file that reruns it")
	}
	if s := p.Supervisor; s.On() && (s.BackoffInitial <= 0 || s.BackoffMax < s.BackoffInitial) {
		return fmt.Errorf("plan's supervisor restarts members after backoff_initial %s up to backoff_max %s: the first must be positive and the second at least as long", s.BackoffInitial, s.BackoffMax)
	}
	for _, f := range p.Faults {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("fault %s: %w", f, err)
		}
		if f.IsLinkFault() && !names[f.Client] {
			return fmt.Errorf("fault %s acts on client %q, which is not a member of the plan", f, f.Client)
		}
		if (f.Family() == faults.FamilyChurn || f.Family() == faults.FamilyMigration) && !names[f.Member] {
			return fmt.Errorf("fault %s acts on member %q, which is not a member of the plan", f, f.Member)
		}
		if f.With != "" && !names[f.With] {
			return fmt.Errorf("fault %s brings in member %q, which is not a member of the plan", f, f.With)
		}
	}
	return nil
}

// Protocol is the group's protocol as the broker will see it: a group with
// any consumer-protocol member becomes a consumer group (classic members
// then join it through the broker's classic-member support, KIP-848
// "upgrade"); otherwise classic.
func (p Plan) Protocol() string {
	if p.IsShare() {
		return history.ProtocolShare
	}
	for _, m := range p.Members {
		if m.Protocol == history.ProtocolConsumer {
			return history.ProtocolConsumer
		}
	}
	return history.ProtocolClassic
}

// Check is the part of the plan the checkers read.
func (p Plan) Check() history.Plan {
	return history.Plan{
		Group:             p.Group,
		Protocol:          p.Protocol(),
		Topics:            slices.Clone(p.Topics),
		SessionTimeout:    p.Timers.SessionTimeout,
		HeartbeatInterval: p.Timers.HeartbeatInterval,
		RebalanceTimeout:  p.Timers.RebalanceTimeout,
		ConvergenceSlack:  p.Timers.ConvergenceSlack,
		Kinds:             p.kinds(),
		Share:             p.Share,
	}
}

// kinds maps each planned member to its kind.
func (p Plan) kinds() map[string]string {
	if len(p.Members) == 0 {
		return nil
	}
	out := make(map[string]string, len(p.Members))
	for _, m := range p.Members {
		out[m.Name] = m.Kind
	}
	return out
}

// TopicNames lists the workload topics.
func (p Plan) TopicNames() []string {
	out := make([]string, len(p.Topics))
	for i, t := range p.Topics {
		out[i] = t.Name
	}
	return out
}

// Args are the `groupquake run` flags that rebuild this plan (the run
// directory is left out: a rerun gets its own): its seed and options, or
// for a saved plan its plan file (--plan).
func (p Plan) Args() []string {
	if p.Saved != nil {
		return []string{"--plan", p.Saved.File}
	}
	o := p.Options
	a := []string{"--seed", strconv.FormatUint(p.Seed, 10), "--scenario", o.Scenario}
	if len(o.Bootstrap) > 0 {
		a = append(a, "--bootstrap", strings.Join(o.Bootstrap, ","))
		if o.Kafka != "" {
			a = append(a, "--kafka", o.Kafka)
		}
	} else if o.Embedded {
		a = append(a, "--embedded")
		if o.Kafka != "" {
			a = append(a, "--kafka", o.Kafka)
		}
	} else {
		if o.Kafka != "" {
			a = append(a, "--kafka", o.Kafka)
		}
		a = append(a, "--nodes", strconv.Itoa(o.Nodes))
		if o.Controllers > 0 {
			a = append(a, "--controllers", strconv.Itoa(o.Controllers))
		}
	}
	if len(o.Kinds) > 0 {
		a = append(a, "--kinds", strings.Join(o.Kinds, ","))
	}
	if o.KafkaClients != "" {
		a = append(a, "--kafka-clients", o.KafkaClients)
	}
	if o.JavaJVMs != "" {
		a = append(a, "--java-jvms", o.JavaJVMs)
	}
	for _, n := range slices.Sorted(maps.Keys(o.ProcessKinds)) {
		a = append(a, "--process-kind", o.ProcessKinds[n].Flag(n))
	}
	if o.Members > 0 {
		a = append(a, "--members", strconv.Itoa(o.Members))
	}
	if o.Records > 0 {
		a = append(a, "--records", strconv.Itoa(o.Records))
	}
	if o.Topic != "" {
		a = append(a, "--topic", o.Topic)
	}
	if o.Group != "" {
		a = append(a, "--group", o.Group)
	}
	if o.Partitions > 0 {
		a = append(a, "--partitions", strconv.Itoa(int(o.Partitions)))
	}
	if o.Rate > 0 {
		a = append(a, "--rate", strconv.Itoa(o.Rate))
	}
	if len(o.Faults) > 0 {
		var ks []string
		for _, k := range o.Faults {
			ks = append(ks, string(k))
		}
		a = append(a, "--faults", strings.Join(ks, ","))
	}
	if o.Intensity != "" {
		a = append(a, "--intensity", o.Intensity)
	}
	if o.UpgradeTo != "" {
		a = append(a, "--upgrade-to", o.UpgradeTo)
	}
	if o.Downgrade != "" {
		a = append(a, "--downgrade", o.Downgrade)
	}
	if o.MigrationPolicy != "" {
		a = append(a, "--migration-policy", o.MigrationPolicy)
	}
	if o.MigrationFrom != "" {
		a = append(a, "--migration-from", o.MigrationFrom)
	}
	if o.MigrationStatic {
		a = append(a, "--migration-static")
	}
	if !p.Supervisor.On() {
		a = append(a, "--supervisor=false") // a plan without a supervisor (one from before it, too) runs without one
	}
	a = append(a, "--duration", o.Duration.String())
	return a
}

// Command is the shell command that reruns the plan.
func (p Plan) Command() string {
	args := p.Args()
	for i, a := range args {
		if strings.ContainsAny(a, " '\"$`\\") {
			args[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return "groupquake run " + strings.Join(args, " ")
}

// LoadPlan reads plan.json.
func LoadPlan(path string) (Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Plan{}, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return Plan{}, fmt.Errorf("%s is not a valid plan (%v): the run directory is damaged; rerun the plan from its seed", path, err)
	}
	if err := p.Validate(); err != nil {
		return Plan{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// KafkaClients is the kafka-clients version of the plan's Java members:
// Options.KafkaClients, else the cluster's version, else the default.
func (p Plan) KafkaClients() string {
	switch {
	case p.Options.KafkaClients != "":
		return p.Options.KafkaClients
	case p.Options.Kafka != "":
		return p.Options.Kafka
	}
	return cluster.DefaultKafkaVersion
}
