package differential

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/results"
)

// Measure is an outcome kind: what a scripted scenario's run measured.
const Measure Kind = "measure"

// Scenario is one of the fixed scripted scenarios run on both releases: a
// seeded baseline run (no faults) of a small group of one protocol.
type Scenario struct {
	Name  string
	Kinds []string
	// Consumer is true for a group of the consumer protocol, whose first
	// member epoch the profile predicts (Profile.FirstMemberEpoch).
	Consumer bool
}

// Scenarios are the fixed scripted scenarios: a consumer-protocol group
// and a classic group, each of groupquake's and kgo's members.
var Scenarios = []Scenario{
	{Name: "consumer-group", Kinds: []string{"consumer", "kgo-consumer", "consumer"}, Consumer: true},
	{Name: "classic-group", Kinds: []string{"classic", "kgo-classic", "classic"}},
}

// ScenarioSeed is the seed of every scenario's plan: both releases run the
// same plan.
const ScenarioSeed = 13

// scenarioWorkload is how long each scenario's workload lasts.
const scenarioWorkload = 10 * time.Second

// Plan is s's plan on Kafka v (the embedded cluster as v when embedded).
func (s Scenario) Plan(v string, embedded bool) (run.Plan, error) {
	o := run.Options{
		Scenario: run.ScenarioBaseline, Kafka: v, Embedded: embedded, Nodes: 1, Kinds: s.Kinds, Members: len(s.Kinds),
		Partitions: 6, Rate: 30, Duration: scenarioWorkload, Group: "gq-diff-" + s.Name, Topic: "gq-diff-" + s.Name + "-records",
	}
	return run.NewPlan(ScenarioSeed, o, kinds.Default().Kinds())
}

// recordBehaviours are, per record type, the profile behaviours that
// decide whether the type is written, its value version and which of its
// fields are set (the record facts of version.Profile).
var recordBehaviours = map[records.Type][]string{
	records.TypeOffsetCommit:                          {"OffsetCommitValueVersion", "OffsetCommitValueVersionWithExpiry", "OffsetCommitTopicID", "OffsetCommitResolvesTopicIDs"},
	records.TypeGroupMetadata:                         {"GroupMetadataValueVersion"},
	records.TypeConsumerGroupMetadata:                 {"ConsumerGroupValueVersion", "MetadataHash"},
	records.TypeConsumerGroupPartitionMetadata:        {"ConsumerGroupValueVersion", "WritesPartitionMetadata"},
	records.TypeConsumerGroupMemberMetadata:           {"ConsumerGroupValueVersion"},
	records.TypeConsumerGroupTargetAssignmentMetadata: {"ConsumerGroupValueVersion", "AssignmentTimestamp", "LastLeaveResetsAssignmentEpoch"},
	records.TypeConsumerGroupTargetAssignmentMember:   {"ConsumerGroupValueVersion"},
	records.TypeConsumerGroupCurrentMemberAssignment:  {"ConsumerGroupValueVersion", "AssignmentEpochs"},
}

// firstEpochBehaviours decide the first member epoch of a consumer group.
var firstEpochBehaviours = []string{"FirstMemberEpoch", "InitialGroupEpoch"}

// Measured is what Measure read from one scenario run, with the
// behaviours that govern each measure (the attribution CompareReleases
// takes): a measure no behaviour governs has an empty list.
type Measured struct {
	Outcomes    []ReleaseOutcome
	Attribution map[string][]string
}

// MeasureRun reads a judged scenario run of release p: the first epoch
// (for a consumer group the profile's prediction beside it), the number of
// rebalances (new generations or epochs after the first, within 1), the
// longest partition stop (within a second or half the longer), the
// checkers' tally, and per record type the shapes of the
// __consumer_offsets records written (value version, tombstones, and every
// field set in some record of it). It is pure.
func MeasureRun(s Scenario, p version.Profile, j run.Judged) Measured {
	m := Measured{Attribution: map[string][]string{}}
	add := func(o ReleaseOutcome, governedBy []string) {
		o.Key = s.Name + ": " + o.Key
		o.Kind, o.What = Measure, "scenario "+s.Name+" ("+strings.Join(s.Kinds, ", ")+")"
		if o.Model == "" {
			o.Model = o.Value
		}
		o.Agrees = o.Agrees || o.Model == o.Value
		m.Outcomes = append(m.Outcomes, o)
		m.Attribution[o.Key] = governedBy
	}
	epochs := check.Epochs(j.Events)
	first := ReleaseOutcome{Key: "first epoch", Value: "none"}
	if len(epochs) > 0 {
		first.Value = strconv.Itoa(int(epochs[0].Epoch))
	}
	if s.Consumer {
		first.Model = strconv.Itoa(int(p.FirstMemberEpoch))
		add(first, firstEpochBehaviours)
	} else {
		add(first, nil)
	}
	n := max(len(epochs)-1, 0)
	add(ReleaseOutcome{Key: "rebalances", Value: strconv.Itoa(n), Numeric: true, Num: float64(n), Slack: 1}, nil)
	var longest time.Duration
	if c := j.Report.RebalanceCost; c != nil {
		for _, pc := range c.Protocols {
			longest = max(longest, pc.PartitionStops.Max)
		}
	}
	ms := float64(longest.Milliseconds())
	add(ReleaseOutcome{Key: "longest partition stop", Value: longest.Round(time.Millisecond).String(), Numeric: true, Num: ms, Slack: max(1000, ms/2)}, nil)
	add(ReleaseOutcome{Key: "checkers", Value: tally(results.Count(j.Report.Verdicts))}, nil)
	var recs []history.Record
	if j.Observations != nil {
		recs = j.Observations.Final.Records
	}
	byType := map[records.Type][]history.Record{}
	for _, r := range recs {
		byType[records.Type(r.KeyType)] = append(byType[records.Type(r.KeyType)], r)
	}
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		add(ReleaseOutcome{Key: "records written: " + t.String(), Value: RecordShapes(byType[t])}, recordBehaviours[t])
	}
	return m
}

func tally(t results.Tally) string {
	s := fmt.Sprintf("%d of %d hold", t.Hold, t.Total)
	if len(t.Violated) > 0 {
		s += ", violated: " + strings.Join(t.Violated, ", ")
	}
	if len(t.Skipped) > 0 {
		s += ", skipped: " + strings.Join(t.Skipped, ", ")
	}
	return s
}

// RecordShapes renders which records a group's __consumer_offsets
// partition holds: one line per record type and value version (or
// tombstone), with every value field set (not zero, empty or all zeros) in
// at least one record of it, nested fields as parent.field; sorted.
func RecordShapes(rs []history.Record) string {
	fields := map[string]map[string]bool{}
	for _, r := range rs {
		head := records.Type(r.KeyType).String()
		if r.Value == nil {
			head += " tombstone"
		} else {
			head += fmt.Sprintf(" v%d", r.ValueVersion)
		}
		if fields[head] == nil {
			fields[head] = map[string]bool{}
		}
		setFields(fields[head], "", r.Value)
	}
	var lines []string
	for _, h := range slices.Sorted(maps.Keys(fields)) {
		fs := slices.Sorted(maps.Keys(fields[h]))
		if len(fs) == 0 {
			lines = append(lines, h)
			continue
		}
		lines = append(lines, h+" {"+strings.Join(fs, " ")+"}")
	}
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, "\n")
}

// setFields adds to set the paths of the fields of v that are set.
func setFields(set map[string]bool, prefix string, v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		set0 := false
		for k, f := range x {
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			if setFields(set, path, f) {
				if _, nested := f.(map[string]any); !nested {
					set[path] = true
				}
				set0 = true
			}
		}
		return set0
	case []any:
		set0 := false
		for _, e := range x {
			if _, ok := e.(map[string]any); ok {
				if setFields(set, prefix, e) {
					set0 = true
				}
				continue
			}
			if setFields(map[string]bool{}, prefix, e) {
				set0 = true
			}
		}
		if set0 && prefix != "" {
			set[prefix] = true
		}
		return set0
	case string:
		return x != ""
	case bool:
		return x
	case json.Number:
		f, err := x.Float64()
		return err != nil || f != 0
	case float64:
		return x != 0
	}
	return true
}

// ScenarioConfig says where the scenarios run.
type ScenarioConfig struct {
	// Embedded runs them on the embedded cluster as each release.
	Embedded bool
	// Dir holds a run directory per scenario: DIR/<name>.
	Dir      string
	Image    cluster.ImageOptions
	BasePort int
	Logf     func(format string, args ...any)
	// OnPhase is passed to every run (run.Config.OnPhase).
	OnPhase func(ctx context.Context, phase string)
}

// RunScenarios runs every scenario of ss on one 1-node cluster of Kafka v
// (container, or embedded) started for the purpose and removed before it
// returns, judges each run, and measures it.
func RunScenarios(ctx context.Context, v version.Version, ss []Scenario, cfg ScenarioConfig) (out Measured, err error) {
	logf := orQuiet(cfg.Logf)
	out.Attribution = map[string][]string{}
	var h cluster.Handle
	if cfg.Embedded {
		e, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: v.String(), Logf: logf})
		if err != nil {
			return out, fmt.Errorf("start the embedded cluster as Kafka %s: %w", v, err)
		}
		h = e
	} else {
		c, err := startSide(ctx, cluster.Config{Version: v.String(), Nodes: 1, BasePort: cfg.BasePort, Image: cfg.Image, Logf: logf})
		if err != nil {
			return out, err
		}
		h = c
	}
	defer closeSide(ctx, h, v.String(), &err)
	for _, s := range ss {
		p, err := s.Plan(v.String(), cfg.Embedded)
		if err != nil {
			return out, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		dir := filepath.Join(cfg.Dir, s.Name)
		logf("scenario %s on Kafka %s: %s", s.Name, v, dir)
		if _, err := run.Run(ctx, run.Config{Plan: p, Dir: dir, Cluster: h, Disposable: true, Logf: logf, OnPhase: cfg.OnPhase}); err != nil {
			return out, fmt.Errorf("scenario %s on Kafka %s could not be carried out: %w (run directory %s)", s.Name, v, err, dir)
		}
		j, err := run.Judge(dir)
		if err != nil {
			return out, fmt.Errorf("scenario %s on Kafka %s: %w", s.Name, v, err)
		}
		m := MeasureRun(s, v.Profile(), j)
		out.Outcomes = append(out.Outcomes, m.Outcomes...)
		maps.Copy(out.Attribution, m.Attribution)
	}
	return out, nil
}
