package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// The migration kinds are the steps of an online migration of a live group
// from one group protocol to the other (KIP-848's upgrade and downgrade
// paths): placed on the schedule by the plan of a migration (never drawn),
// each an event of the history like a fault, so the report shows each
// replacement beside what the group went through meanwhile.
const (
	// MemberReplace starts member With (a member the plan keeps out of the
	// group until then) and, once the group has taken it in, makes Member
	// commit and leave for good: one step of a rolling deploy that moves a
	// group's members to another client. When the coordinator refuses the
	// newcomer (group.consumer.migration.policy forbids the conversion the
	// join asks for), the newcomer is stopped and Member stays: the deploy
	// is rolled back, and Member then stands for With in the steps after.
	// Its interval is how long the step stays in force once done; its heal
	// undoes nothing.
	MemberReplace Kind = "member-replace"
)

// placedKind is the part of a kind that a plan places and no schedule
// draws (a migration's or an upgrade's steps): unfit says why.
type placedKind struct {
	kind   Kind
	family Family
	doc    string
	why    string
}

func (k placedKind) Kind() Kind         { return k.kind }
func (k placedKind) Family() Family     { return k.family }
func (k placedKind) Doc() string        { return k.doc }
func (k placedKind) unfit(Space) string { return k.why }

func (k placedKind) durations(s Space) (time.Duration, time.Duration) {
	return s.MinDuration, s.MaxDuration
}

func (k placedKind) draw(*rand.Rand, Space, *Fault) {}

// Replacer is the part of Members that migration steps need: the harness's
// crew implements it.
type Replacer interface {
	// Replace starts member in, waits until the group took it in or
	// refused it, and then makes out leave for good (taken in) or stops in
	// (refused). It says what it saw; a refusal is what it saw, not an
	// error.
	Replace(ctx context.Context, out, in string) (string, error)
}

// FamilyMigration holds the steps of an online protocol migration
// (migration.go): placed by a migration's plan, never drawn.
const FamilyMigration Family = "migration"

type migrationKind struct{ placedKind }

func init() {
	register(migrationKind{placedKind{MemberReplace, FamilyMigration,
		"replace a member by a late joiner of the plan (of the other protocol, in a migration); a refused newcomer is stopped and the member stays",
		"it is a step of an online protocol migration, placed by the migration's plan (groupquake run --scenario migration), never drawn"}})
}

func (k migrationKind) validate(f Fault) error {
	switch {
	case f.Member == "" || f.With == "":
		return fmt.Errorf("fault %s needs the member that leaves and the one that replaces it (member %q, with %q)", f.Kind, f.Member, f.With)
	case f.Member == f.With:
		return fmt.Errorf("fault %s: member %s cannot replace itself", f.Kind, f.Member)
	case f.Client != "" || f.Node != 0:
		return fmt.Errorf("fault %s acts on members %s and %s, not on a node or a link (node %d, client %q)", f.Kind, f.Member, f.With, f.Node, f.Client)
	case f.Trigger != AtTime:
		return fmt.Errorf("fault %s is placed at a time, not on a trigger (%q)", f.Kind, f.Trigger)
	}
	return nil
}

func (k migrationKind) Apply(ctx context.Context, env Env, f Fault) (string, error) {
	r, ok := env.Members.(Replacer)
	if !ok {
		return "", errNoPart(f, "members that can be replaced")
	}
	return r.Replace(ctx, f.Member, f.With)
}

func (k migrationKind) Heal(context.Context, Env, Fault) (string, error) {
	return "", nil
}

// Replacements lists the members a schedule's replacements bring in: the
// workload must not start them in the warm-up.
func Replacements(sched []Fault) []string {
	return membersOf(sched, MemberReplace, func(f Fault) string { return f.With })
}

// RollingReplace is the schedule of a rolling replacement: out[i] replaced
// by in[i], the first at start and each next one every after, each in force
// for settle once done.
func RollingReplace(out, in []string, start, every, settle time.Duration) ([]Fault, error) {
	if len(out) == 0 || len(out) != len(in) {
		return nil, fmt.Errorf("a rolling replacement needs as many newcomers as members it replaces, at least one (%d and %d)", len(in), len(out))
	}
	if start < 0 || every <= 0 || settle <= 0 {
		return nil, fmt.Errorf("a rolling replacement needs a start ≥ 0 and positive spacing and settle times (got %s, %s, %s)", start, every, settle)
	}
	var sched []Fault
	for i := range out {
		f := Fault{Kind: MemberReplace, Member: out[i], With: in[i], At: start + time.Duration(i)*every, For: settle}
		if err := f.Validate(); err != nil {
			return nil, err
		}
		sched = append(sched, f)
	}
	return sched, nil
}
