package check

import (
	"cmp"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// ClientGroupquake is the client of groupquake's own member kinds (classic, classic-cooperative,
// consumer): the kinds whose name begins with a protocol's.
const ClientGroupquake = "groupquake"

// ClientOf names the client library a member kind runs, from the kind's name alone, so that a kind
// added to the registry needs no entry here. A kind is named <client>-<protocol>[-<variant>]
// ("kgo-classic", "java-consumer-range", "broken-classic-ignore-fence") or, for a client with one
// protocol, <client>[-<assignor>] ("sarama-range", "confluent-python-cooperative", "kafkago"): the
// client is what comes before the first protocol word, else the name without its trailing assignor
// words; groupquake's own kinds begin with the protocol ("classic-cooperative", "consumer",
// "share") and are "groupquake". The broken kinds are "broken", a client of their own: what they do
// wrong is not groupquake's members' doing.
func ClientOf(kind string) string {
	words := strings.Split(kind, "-")
	for i, w := range words {
		if w == history.ProtocolClassic || w == history.ProtocolConsumer || w == history.ProtocolShare {
			if i == 0 {
				return ClientGroupquake
			}
			return strings.Join(words[:i], "-")
		}
	}
	n := len(words)
	for n > 1 && assignorWords[words[n-1]] {
		n--
	}
	return strings.Join(words[:n], "-")
}

// assignorWords are the words a kind's name ends with to name its assignor: they name a variant of
// the client, not the client.
var assignorWords = map[string]bool{"range": true, "roundrobin": true, "sticky": true, "cooperative": true, "uniform": true}

// RunMember is one member of a run as its plan names it.
type RunMember struct {
	Name, Kind, Protocol string
}

// Charge is one violation, or one match of a registered finding, and the members its events
// concern: the members (and hence the kinds and clients) it is charged to. One that concerns
// members of several clients is charged to each of them; one that concerns no member (a record the
// producer saw acknowledged and nobody consumed, a description of the group) is the run's.
type Charge struct {
	Checker string `json:"checker"`
	// Message is the violation's (empty for a finding's match noted without a violation).
	Message string `json:"message,omitempty"`
	// Finding is the registered finding it matches ("" when unexplained).
	Finding string `json:"finding,omitempty"`
	// Failed is false for a finding's match that was noted, not failed.
	Failed       bool    `json:"failed"`
	EventIndexes []int64 `json:"event_indexes,omitempty"`
	// Members are the run's members whose events it cites, or the member a finding's match names.
	Members []string `json:"members,omitempty"`
}

// MemberPause is one stretch without consumption, charged to a member: a member stop (the member
// owned nothing until it got partitions again) is its own; a partition stop is charged to the
// member that resumed the partition.
type MemberPause struct {
	Member string `json:"member"`
	// Partition is set for a partition stop; empty for a member stop.
	Partition string        `json:"partition,omitempty"`
	Duration  time.Duration `json:"duration"`
}

// Attribution is what one run's verdicts and rebalance cost say about each of its members: every
// violation and every match of a registered finding with the members it concerns, and every pause
// with the member it is charged to.
type Attribution struct {
	Members []RunMember
	// Violations are every violation of every verdict, in verdict order.
	Violations []Charge
	// Known are the verdicts' matches of registered findings (Verdict.Known), a failed one
	// alongside the violation it labels.
	Known []Charge
	// Sighted are the report's sightings of findings that none of its violations is labelled with
	// (Report.SightedWithoutViolation), each with the member it names (else the members its events
	// are): Finding, Message (the sighting's What), EventIndexes and Members; Checker empty, Failed
	// false.
	Sighted []Charge
	// Pauses are the rebalance cost's stops, each with the member it is charged to; a partition stop
	// whose resuming event is no member's is left out.
	Pauses []MemberPause
	// Hold, Violated and Skipped count the run's verdicts.
	Hold, Violated, Skipped int
	// Holds is whether the run reached its end with no violation; CutShort whether it stopped
	// before its end (Report.Stopped) with no violation up to there: neither a hold nor a
	// violation.
	Holds, CutShort bool
}

// Attribute charges a run's violations, findings' matches, findings sighted without a violation and
// pauses to its members. A violation
// concerns the members whose events it cites: an event is a member's when its payload names the
// member, or else when its process is the member or one of the member's own ("m1/hb"), and the
// member is one of members (the producer's, the observer's, the nemesis's and the harness's events
// concern no member). A finding's match concerns the member it names, else the members its events
// do; so does a sighting.
func Attribute(events []history.Event, members []RunMember, rep Report) Attribution {
	a := Attribution{Members: slices.Clone(members), Holds: rep.Holds && rep.Stopped == "", CutShort: rep.Holds && rep.Stopped != ""}
	known := map[string]bool{}
	for _, m := range members {
		known[m.Name] = true
	}
	at := eventLookup(events)
	concerned := func(idx []int64) []string {
		var out []string
		for _, i := range idx {
			e, ok := at(i)
			if !ok {
				continue
			}
			if m := eventMember(e); known[m] && !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, v := range rep.Verdicts {
		switch {
		case v.Skipped != "":
			a.Skipped++
		case v.Holds:
			a.Hold++
		default:
			a.Violated++
		}
		for _, x := range v.Violations {
			a.Violations = append(a.Violations, Charge{Checker: v.Name, Message: x.Message, Finding: x.Finding, Failed: true,
				EventIndexes: x.EventIndexes, Members: concerned(x.EventIndexes)})
		}
		for _, k := range v.Known {
			c := Charge{Checker: v.Name, Finding: k.Finding, Failed: k.Failed, EventIndexes: k.Events}
			if known[k.Member] {
				c.Members = []string{k.Member}
			} else {
				c.Members = concerned(k.Events)
			}
			a.Known = append(a.Known, c)
		}
	}
	for _, x := range rep.SightedWithoutViolation() {
		c := Charge{Finding: x.Finding, Message: x.What, EventIndexes: x.Events}
		if known[x.Member] {
			c.Members = []string{x.Member}
		} else {
			c.Members = concerned(x.Events)
		}
		a.Sighted = append(a.Sighted, c)
	}
	if rep.RebalanceCost != nil {
		for _, p := range slices.Sorted(maps.Keys(rep.RebalanceCost.Protocols)) {
			for _, s := range rep.RebalanceCost.Protocols[p].Stops {
				m := s.Member
				if s.Partition != "" && len(s.EventIndexes) == 2 {
					if e, ok := at(s.EventIndexes[1]); ok {
						m = eventMember(e)
					}
				}
				if known[m] {
					a.Pauses = append(a.Pauses, MemberPause{Member: m, Partition: s.Partition, Duration: s.Duration})
				}
			}
		}
	}
	return a
}

// eventMember is the member an event is about: the one its payload names, else its process's.
func eventMember(e history.Event) string {
	var named string
	switch v := e.Value.(type) {
	case history.GroupCall: // Join, Sync, Heartbeat, Leave, Commit
		named = v.Call().Member
	case history.Consume:
		named = v.Member
	case history.Assignment:
		named = v.Member
	case history.Membership:
		named = v.Member
	}
	return memberName(named, e.Process)
}

// eventLookup finds events by index: a history's indexes are dense from 0, a filtered one's are
// searched.
func eventLookup(events []history.Event) func(int64) (history.Event, bool) {
	return func(i int64) (history.Event, bool) {
		if i >= 0 && i < int64(len(events)) && events[i].Index == i {
			return events[i], true
		}
		j := sort.Search(len(events), func(k int) bool { return events[k].Index >= i })
		if j < len(events) && events[j].Index == i {
			return events[j], true
		}
		return history.Event{}, false
	}
}

// ScoredRun is one run directory as the scorecard reads it: where it ran, and its attribution.
type ScoredRun struct {
	Dir      string
	Seed     uint64
	Kafka    string
	Scenario string
	// Err says why the run could not be read; it then counts in no cell.
	Err string
	Attribution
}

// Scorecard dimensions: a cell's row is a client or a member kind.
const (
	ByClient = "client"
	ByKind   = "kind"
)

// Scorecard is runs summed per (client or kind, Kafka version, scenario family): the question a user
// brings is whether the consumer they run survives what a scenario does on their Kafka.
type Scorecard struct {
	// By is ByClient or ByKind: what a cell's Client names.
	By    string
	Cells []Cell
	// Rows (clients, or kinds), Kafkas and Scenarios are the cells' keys, each in the cells' order.
	Rows, Kafkas, Scenarios []string
	// Runs counts every run read; Hold and Violated those that held and those that found a
	// violation, CutShort those that stopped before their end with none up to there; Unreadable
	// lists the directories that could not be read.
	Runs, Hold, Violated, CutShort int
	Unreadable                     []string
}

// Cell is one client (or kind) on one Kafka version under one scenario family, over every run of
// that version and family that had a member of it.
type Cell struct {
	// Client is the client library (ClientOf); Kind, by kind (ByKind), the member kind.
	Client   string
	Kind     string
	Kafka    string
	Scenario string
	// Kinds are the member kinds of the client seen in the cell's runs.
	Kinds []string
	// Runs counts the runs; RunsHold and RunsViolated those that held and found a violation
	// (whoever was charged), RunsCutShort those cut short with no violation up to there.
	Runs, RunsHold, RunsViolated, RunsCutShort int
	// Hold, Violated and Skipped count the verdicts of the cell's runs.
	Hold, Violated, Skipped int
	// Charged counts the violations charged to the client, Shared those of them that concern
	// another client's members too, RunsCharged the runs with one; Checkers counts them per
	// checker.
	Charged, Shared, RunsCharged int
	Checkers                     map[string]int
	// RunLevel counts the violations of the cell's runs that concern no member.
	RunLevel int
	// MemberPauses are the member stops of the client's members; PartitionPauses the partition
	// stops its members ended (they resumed the partition).
	MemberPauses, PartitionPauses Stats
	// Findings counts the matches of registered findings charged to the client or to the run, per
	// finding id.
	Findings map[string]int
	// Sighted counts, per finding id, the cell's runs that sighted it without a violation labelled
	// with it (Report.SightedWithoutViolation), the sighting charged to the client or to the run as
	// a match is; Sightings are those sightings, in run order, each with its run.
	Sighted   map[string]int
	Sightings []CellSighting
	// Violations are the charged and the run-level violations, in run order, each with its run.
	Violations []CellViolation
	// RunDirs are the cell's runs.
	RunDirs []string
}

// CellViolation is one violation of a cell: charged to the cell's client (Clients lists every
// client, or by kind every kind, it concerns) or the run's (Clients empty).
type CellViolation struct {
	Dir string
	Charge
	Clients []string
}

// CellSighting is one sighting of a finding without a violation labelled with it, in a run of the
// cell: charged to the cell's client (Clients lists every client, or by kind every kind, it
// concerns) or the run's (Clients empty). Its Charge's Message is the sighting's What.
type CellSighting struct {
	Dir string
	Charge
	Clients []string
}

// Row is what a cell's row names: its kind by kind, else its client.
func (c Cell) Row() string {
	if c.Kind != "" {
		return c.Kind
	}
	return c.Client
}

// BuildScorecard sums runs into cells, by client (ByClient) or by member kind (ByKind), sorted by
// client, Kafka version and scenario. A run counts in the cell of each client it ran a member of.
func BuildScorecard(runs []ScoredRun, by string) Scorecard {
	sc := Scorecard{By: by}
	type key struct{ client, kafka, scenario string }
	cells := map[key]*Cell{}
	type pauses struct{ mem, part []time.Duration }
	ps := map[key]*pauses{}
	for _, r := range runs {
		if r.Err != "" {
			sc.Unreadable = append(sc.Unreadable, r.Dir)
			continue
		}
		sc.Runs++
		switch {
		case r.Holds:
			sc.Hold++
		case r.CutShort:
			sc.CutShort++
		default:
			sc.Violated++
		}
		rowOf := map[string]string{}
		kindsOf := map[string][]string{}
		for _, m := range r.Members {
			row := ClientOf(m.Kind)
			if by == ByKind {
				row = m.Kind
			}
			rowOf[m.Name] = row
			if !slices.Contains(kindsOf[row], m.Kind) {
				kindsOf[row] = append(kindsOf[row], m.Kind)
			}
		}
		rowsOf := func(members []string) []string {
			var out []string
			for _, m := range members {
				if c := rowOf[m]; !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
			slices.Sort(out)
			return out
		}
		for _, row := range slices.Sorted(maps.Keys(kindsOf)) {
			k := key{row, r.Kafka, r.Scenario}
			c := cells[k]
			if c == nil {
				c = &Cell{Client: row, Kafka: r.Kafka, Scenario: r.Scenario, Checkers: map[string]int{}, Findings: map[string]int{}, Sighted: map[string]int{}}
				if by == ByKind {
					c.Client, c.Kind = ClientOf(row), row
				}
				cells[k], ps[k] = c, &pauses{}
			}
			for _, kind := range kindsOf[row] {
				if !slices.Contains(c.Kinds, kind) {
					c.Kinds = append(c.Kinds, kind)
				}
			}
			c.Runs++
			c.RunDirs = append(c.RunDirs, r.Dir)
			switch {
			case r.Holds:
				c.RunsHold++
			case r.CutShort:
				c.RunsCutShort++
			default:
				c.RunsViolated++
			}
			c.Hold += r.Hold
			c.Violated += r.Violated
			c.Skipped += r.Skipped
			c.charge(r, row, rowsOf)
			for _, p := range r.Pauses {
				if rowOf[p.Member] != row {
					continue
				}
				if p.Partition == "" {
					ps[k].mem = append(ps[k].mem, p.Duration)
				} else {
					ps[k].part = append(ps[k].part, p.Duration)
				}
			}
		}
	}
	for k, c := range cells {
		c.MemberPauses, c.PartitionPauses = statsOf(ps[k].mem), statsOf(ps[k].part)
		slices.Sort(c.Kinds)
		sc.Cells = append(sc.Cells, *c)
	}
	sc.index()
	return sc
}

// charge adds run r's violations, known findings and findings sighted without a violation to the
// cell of row:
// those of its members (rowsOf gives the rows of members) and the run's own.
func (c *Cell) charge(r ScoredRun, row string, rowsOf func([]string) []string) {
	charged := false
	for _, x := range r.Violations {
		rows := rowsOf(x.Members)
		switch {
		case len(rows) == 0:
			c.RunLevel++
		case slices.Contains(rows, row):
			c.Charged++
			charged = true
			c.Checkers[x.Checker]++
			if len(rows) > 1 {
				c.Shared++
			}
		default:
			continue
		}
		c.Violations = append(c.Violations, CellViolation{Dir: r.Dir, Charge: x, Clients: rows})
	}
	if charged {
		c.RunsCharged++
	}
	for _, x := range r.Known {
		if rows := rowsOf(x.Members); len(rows) == 0 || slices.Contains(rows, row) {
			c.Findings[x.Finding]++
		}
	}
	counted := map[string]bool{}
	for _, x := range r.Sighted {
		rows := rowsOf(x.Members)
		if len(rows) > 0 && !slices.Contains(rows, row) {
			continue
		}
		c.Sightings = append(c.Sightings, CellSighting{Dir: r.Dir, Charge: x, Clients: rows})
		if !counted[x.Finding] {
			counted[x.Finding] = true
			c.Sighted[x.Finding]++
		}
	}
}

// index sorts the cells by client, kind, Kafka version and scenario, and
// lists the rows, versions and scenarios they have.
func (sc *Scorecard) index() {
	slices.SortFunc(sc.Cells, func(a, b Cell) int {
		return cmp.Or(cmp.Compare(a.Client, b.Client), cmp.Compare(a.Kind, b.Kind), compareVersions(a.Kafka, b.Kafka), cmp.Compare(a.Scenario, b.Scenario))
	})
	for _, c := range sc.Cells {
		if !slices.Contains(sc.Rows, c.Row()) {
			sc.Rows = append(sc.Rows, c.Row())
		}
		if !slices.Contains(sc.Kafkas, c.Kafka) {
			sc.Kafkas = append(sc.Kafkas, c.Kafka)
		}
		if !slices.Contains(sc.Scenarios, c.Scenario) {
			sc.Scenarios = append(sc.Scenarios, c.Scenario)
		}
	}
	slices.SortFunc(sc.Kafkas, compareVersions)
	slices.Sort(sc.Scenarios)
}

// compareVersions orders Kafka versions as releases ("4.10.0" after "4.4.0"), newest first, and
// anything that is not a bare version ("embedded 4.4.0") after them, by name.
func compareVersions(a, b string) int {
	pa, oka := versionParts(a)
	pb, okb := versionParts(b)
	switch {
	case oka && okb:
		return -slices.Compare(pa, pb)
	case oka:
		return -1
	case okb:
		return 1
	}
	return cmp.Compare(a, b)
}

func versionParts(v string) ([]int, bool) {
	if v == "" {
		return nil, false
	}
	var out []int
	for _, s := range strings.Split(v, ".") {
		n := 0
		if s == "" {
			return nil, false
		}
		for _, r := range s {
			if r < '0' || r > '9' {
				return nil, false
			}
			n = 10*n + int(r-'0')
		}
		out = append(out, n)
	}
	return out, true
}
