package run

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/faults"
	"github.com/groupquake/groupquake/harness/history"
)

// An online migration (ScenarioMigration) moves a live group from the
// classic protocol to the consumer protocol and back, one member at a time,
// as a rolling deploy of a new client build does: the group starts with
// classic members only; each is replaced in turn by a consumer-protocol
// member (the group turns mixed at the first, a consumer group of classic
// and consumer members, then a consumer group of consumer members), then
// each of those by a classic member again (at the last, the group is
// converted back to a classic group, where the policy allows it);
// Options.MigrationFrom consumer runs it the other way, consumer →
// classic → consumer, which meets the policy's other refusals. The
// broker's group.consumer.migration.policy (Options.MigrationPolicy)
// decides which conversions Kafka makes and which joins it refuses;
// ExpectMigration says which, and MigrationSteps reads what happened.

// The timing of a migration's steps inside the workload phase. Steps run
// one at a time (each waits for its newcomer to be taken in or refused), so
// a slow machine stretches the run instead of overlapping them.
const (
	// migrationLead is how long the classic group works before the first
	// replacement.
	migrationLead = 3 * time.Second
	// migrationEvery is the planned spacing of the replacements: a
	// rebalance for the newcomer and one for the leaver.
	migrationEvery = 4 * time.Second
	// migrationSettle is how long a replacement stays in force once done.
	migrationSettle = time.Second
	// migrationTail is how long the group works after the last step.
	migrationTail = 5 * time.Second
	// migrationMembers is the group's size when Options.Members is 0:
	// enough for every default kind of each protocol.
	migrationMembers = 3
)

// The member kinds a migration cycles over when Options.Kinds is empty:
// every kind of groupquake and kgo, per protocol.
var (
	migrationClassicKinds  = []string{"classic", "kgo-classic", "classic-cooperative"}
	migrationConsumerKinds = []string{"consumer", "kgo-consumer"}
)

// MigrationPolicies are the values of group.consumer.migration.policy.
func MigrationPolicies() []string {
	return []string{consumergroup.MigrationBidirectional, consumergroup.MigrationUpgrade, consumergroup.MigrationDowngrade, consumergroup.MigrationDisabled}
}

// migrationPolicySetting is the broker property the policy sets.
const migrationPolicySetting = "group.consumer.migration.policy"

// checkMigrationFrom says what is wrong with Options.MigrationFrom.
func checkMigrationFrom(from string) error {
	switch from {
	case "", history.ProtocolClassic, history.ProtocolConsumer:
		return nil
	}
	return fmt.Errorf("unknown protocol %q to migrate from: classic (classic → consumer → classic) or consumer (consumer → classic → consumer)", from)
}

func checkMigrationPolicy(p string) error {
	if p == "" || slices.Contains(MigrationPolicies(), p) {
		return nil
	}
	return fmt.Errorf("unknown migration policy %q: group.consumer.migration.policy is one of %s", p, strings.Join(MigrationPolicies(), ", "))
}

// migrationWorkload is the workload phase a migration of n members per leg
// needs as planned.
func migrationWorkload(n int) time.Duration {
	return migrationLead + time.Duration(2*n-1)*migrationEvery + migrationTail
}

// staticMigration gives a static migration's members their
// group.instance.id: the members that take each other's place (the i-th of
// every leg) share one, so that each replacement is one static member's
// rolling bounce into the other protocol and back. Kafka lets a member of
// either protocol take the place of a static member of the other at once,
// released or not (GroupMetadataManager.getOrMaybeSubscribeStaticConsumerGroupMember
// asks for a released instance id only when both use the consumer protocol);
// the crew still lets the old one go first, as a bounce does (crew.Replace).
func staticMigration(p *Plan, legSize int) {
	for i := range p.Members {
		p.Members[i].InstanceID = fmt.Sprintf("%s-i%d", p.Group, i%legSize+1)
	}
}

// migrationMembersOf builds a migration's members and its steps: n classic
// members that start the group, n consumer-protocol members that replace
// them, n classic members that replace those. kinds (the plan's
// Options.Kinds, else every default kind) are split by protocol and cycled
// within each leg.
func migrationMembersOf(o Options, kinds map[string]string, n int) (classicKinds, consumerKinds []string, err error) {
	ks := o.Kinds
	if len(ks) == 0 {
		ks = append(slices.Clone(migrationClassicKinds), migrationConsumerKinds...)
	}
	for _, k := range ks {
		switch kinds[k] {
		case history.ProtocolClassic:
			classicKinds = append(classicKinds, k)
		case history.ProtocolConsumer:
			consumerKinds = append(consumerKinds, k)
		}
	}
	if len(classicKinds) == 0 || len(consumerKinds) == 0 {
		return nil, nil, fmt.Errorf("a migration moves the group between the protocols: --kinds needs a classic kind and a consumer kind (got %s)", strings.Join(ks, ","))
	}
	if n < 2 {
		return nil, nil, fmt.Errorf("a migration replaces members one by one in a group that keeps working: it needs 2 members or more, not %d", n)
	}
	return classicKinds, consumerKinds, nil
}

// migrationSteps are the replacements of the plan's migration: m1..mn by
// the next n members, those by the last n.
func migrationSteps(p Plan, n int) ([]faults.Fault, error) {
	names := func(from int) []string {
		var out []string
		for i := range n {
			out = append(out, p.Members[from+i].Name)
		}
		return out
	}
	classic, consumer, back := names(0), names(n), names(2*n)
	up, err := faults.RollingReplace(classic, consumer, migrationLead, migrationEvery, migrationSettle)
	if err != nil {
		return nil, err
	}
	down, err := faults.RollingReplace(consumer, back, migrationLead+time.Duration(n)*migrationEvery, migrationEvery, migrationSettle)
	if err != nil {
		return nil, err
	}
	steps := append(up, down...)
	steps[len(steps)-1].For = migrationTail
	if need := migrationWorkload(n); p.Workload < need {
		return nil, fmt.Errorf("a workload of %s is too short for the %d replacements of this migration as planned (%s before the first, %s apart, %s after the last): use --duration %s or more", p.Workload, len(steps), migrationLead, migrationEvery, migrationTail, need)
	}
	return steps, nil
}

// MigrationExpectation is what Kafka does to a migration.
type MigrationExpectation struct {
	// Steps holds, for each replacement in plan order, the error the
	// coordinator refuses the newcomer with (a Kafka error name), "" when
	// the group takes it in.
	Steps []string
	// Final is the group's type at the end.
	Final string
	// Why says which rules of Kafka decide it.
	Why string
}

// ExpectMigration is what Kafka release kafka does, under policy, to a
// group of legSize members migrated as ScenarioMigration plans it from
// protocol from (classic: classic → consumer → classic; consumer: consumer
// → classic → consumer). It follows the group step by step with the rules
// of GroupMetadataManager:
//   - a consumer-protocol member joining a classic group that has members
//     converts it (ConsumerGroup.fromClassicGroup) only where the policy
//     allows an upgrade (bidirectional, upgrade); otherwise its heartbeat
//     gets GROUP_ID_NOT_FOUND ("Cannot upgrade classic group … because
//     online upgrade is disabled") and the group stays classic;
//   - a classic member joins a consumer group whatever the policy, except
//     where the release refuses it under disabled (KAFKA-20640,
//     version.Profile.ClassicJoinRefusedWhenMigrationDisabled:
//     INCONSISTENT_GROUP_PROTOCOL);
//   - when the last consumer-protocol member leaves a consumer group whose
//     other members are classic, the group is converted back to a classic
//     group (ClassicGroup.fromConsumerGroup) only where the policy allows a
//     downgrade (bidirectional, downgrade); otherwise it stays a consumer
//     group of classic members;
//   - a refused newcomer is stopped and the member it was to replace stays.
func ExpectMigration(policy, kafka, from string, legSize int) (MigrationExpectation, error) {
	if err := checkMigrationPolicy(policy); err != nil {
		return MigrationExpectation{}, err
	}
	if err := checkMigrationFrom(from); err != nil {
		return MigrationExpectation{}, err
	}
	if policy == "" {
		policy = consumergroup.MigrationBidirectional
	}
	if from == "" {
		from = history.ProtocolClassic
	}
	v, err := version.Parse(kafka)
	if err != nil {
		return MigrationExpectation{}, err
	}
	up := policy == consumergroup.MigrationBidirectional || policy == consumergroup.MigrationUpgrade
	down := policy == consumergroup.MigrationBidirectional || policy == consumergroup.MigrationDowngrade
	classicOut := policy == consumergroup.MigrationDisabled && v.Profile().ClassicJoinRefusedWhenMigrationDisabled
	other := history.ProtocolConsumer
	if from == history.ProtocolConsumer {
		other = history.ProtocolClassic
	}
	members := slices.Repeat([]string{from}, legSize)
	group := from
	var w MigrationExpectation
	var why []string
	for _, newcomer := range []string{other, from} {
		for i := range legSize {
			refusal := ""
			switch {
			case group == history.ProtocolClassic && newcomer == history.ProtocolConsumer && !up:
				refusal = "GROUP_ID_NOT_FOUND"
				why = append(why, fmt.Sprintf("policy %s allows no online upgrade: a consumer-protocol member is refused while the classic group has members", policy))
			case group == history.ProtocolClassic && newcomer == history.ProtocolConsumer:
				group = history.ProtocolConsumer
				why = append(why, "the first consumer-protocol member converts the classic group to a consumer group")
			case group == history.ProtocolConsumer && newcomer == history.ProtocolClassic && classicOut:
				refusal = "INCONSISTENT_GROUP_PROTOCOL"
				why = append(why, fmt.Sprintf("Kafka %s keeps classic members out of a consumer group under policy disabled (KAFKA-20640)", v))
			}
			w.Steps = append(w.Steps, refusal)
			if refusal != "" {
				continue
			}
			members[i] = newcomer
			if group == history.ProtocolConsumer && !slices.Contains(members, history.ProtocolConsumer) {
				if down {
					group = history.ProtocolClassic
					why = append(why, "the last consumer-protocol member's leave converts the group back to a classic group")
				} else {
					why = append(why, fmt.Sprintf("policy %s allows no online downgrade: the group stays a consumer group of classic members", policy))
				}
			}
		}
	}
	w.Final = group
	w.Why = strings.Join(slices.Compact(why), "; ")
	if w.Why == "" {
		w.Why = "no conversion and no refusal: the group keeps its type"
	}
	return w, nil
}

// MigrationStep is one replacement of a run as its history shows it.
type MigrationStep struct {
	Out, In string
	// Done: the step's start was answered (taken in or refused); a step
	// that failed or never started is not Done.
	Done bool
	// Refused is the error the coordinator refused In with, "" when it
	// took In in.
	Refused string
	Effect  string
}

var refusedRE = regexp.MustCompile(regexp.QuoteMeta(RefusedMark) + `([A-Z_]+)`)

// MigrationSteps reads the replacements of a run from its history, in the
// order they were planned.
func MigrationSteps(events []history.Event) []MigrationStep {
	var out []MigrationStep
	idx := map[string]int{}
	for _, e := range events {
		if e.F != history.FFaultStart {
			continue
		}
		v, err := history.ValueAs[history.Fault](e)
		if err != nil || v.What != string(faults.MemberReplace) || len(v.Target) == 0 {
			continue
		}
		i, seen := idx[e.Process]
		if !seen {
			i = len(out)
			idx[e.Process] = i
			out = append(out, MigrationStep{Out: v.Target[0], In: v.Params["with"]})
		}
		if e.Type != history.OK {
			continue
		}
		s := &out[i]
		s.Done, s.Effect = true, v.Effect
		if m := refusedRE.FindStringSubmatch(v.Effect); m != nil {
			s.Refused = m[1]
		}
	}
	return out
}

// CheckMigration compares a run's steps with what Kafka is expected to do
// and with the group's type at the end; each difference is one line.
func CheckMigration(steps []MigrationStep, want MigrationExpectation, final *history.GroupDescription) []string {
	var out []string
	if len(steps) != len(want.Steps) {
		out = append(out, fmt.Sprintf("the history holds %d replacements, the plan %d", len(steps), len(want.Steps)))
	}
	for i, s := range steps {
		exp := ""
		if i < len(want.Steps) {
			exp = want.Steps[i]
		}
		switch {
		case !s.Done:
			out = append(out, fmt.Sprintf("step %d (%s by %s) did not complete: %s", i+1, s.Out, s.In, s.Effect))
		case s.Refused != exp && exp == "":
			out = append(out, fmt.Sprintf("step %d: %s was refused with %s, Kafka should have taken it in (%s)", i+1, s.In, s.Refused, want.Why))
		case s.Refused != exp:
			out = append(out, fmt.Sprintf("step %d: %s was taken in (%s), Kafka should have refused it with %s (%s)", i+1, s.In, s.Effect, exp, want.Why))
		}
	}
	switch {
	case final == nil:
		out = append(out, "no final description of the group")
	case final.Protocol != want.Final:
		out = append(out, fmt.Sprintf("the group is a %s group at the end, want a %s group (%s)", final.Protocol, want.Final, want.Why))
	}
	return out
}
