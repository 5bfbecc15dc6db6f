package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The upgrade kinds are the steps of a rolling upgrade, placed on the
// schedule by the plan of an upgrade (never drawn by Generate): each is an
// event of the history like a fault, so the report shows a node's
// replacement and the features' finalization beside what the group went
// through meanwhile. They take the node slot like node faults (one node out
// of service at a time), so an upgrade under the nemesis never takes a
// second node down.
const (
	// NodeUpgrade replaces a node's binaries with release Version on the
	// same data (stopped gracefully, recreated from the newer image); it is
	// in force until its heal, which waits until every partition's ISR is
	// full again, as a rolling upgrade does before it moves on.
	NodeUpgrade Kind = "node-upgrade"
	// FeatureUpdate finalizes the feature levels Features through the Admin
	// API (UpdateFeatures): metadata.version and group.version after the
	// last node of an upgrade. Its heal undoes nothing (Kafka refuses most
	// metadata.version downgrades); it only ends its interval.
	FeatureUpdate Kind = "feature-update"
)

// Upgrader is the part of a Target that upgrade steps need: a cluster whose
// nodes can be recreated from another release on the same data and whose
// finalized features can be set. Container clusters implement it.
type Upgrader interface {
	// UpgradeNode replaces node id with one running release version and
	// returns when it serves again.
	UpgradeNode(ctx context.Context, id NodeID, version string) error
	// WaitFullISR returns when no partition is under-replicated.
	WaitFullISR(ctx context.Context) error
	// UpdateFeatures sets the finalized levels of the named features and
	// returns when every broker reports them, saying what changed.
	UpdateFeatures(ctx context.Context, levels map[string]int16) (string, error)
}

type upgradeKind struct {
	placedKind
	apply func(context.Context, Upgrader, Fault) (string, error)
	heal  func(context.Context, Upgrader, Fault) (string, error)
}

// upgradeStep is the placedKind of an upgrade's step.
func upgradeStep(kind Kind, doc string) placedKind {
	return placedKind{kind, FamilyUpgrade, doc, "it is a step of a rolling upgrade, placed by the upgrade's plan (groupquake upgrade, or run --upgrade-to), never drawn"}
}

func init() {
	register(upgradeKind{upgradeStep(NodeUpgrade, "replace a node's binaries with another Kafka release on the same data; the heal waits for a full ISR"),
		func(ctx context.Context, u Upgrader, f Fault) (string, error) {
			return "node " + strconv.Itoa(int(f.Node)) + " serves as Kafka " + f.Version, u.UpgradeNode(ctx, f.Node, f.Version)
		},
		func(ctx context.Context, u Upgrader, f Fault) (string, error) {
			return "every partition's ISR is full", u.WaitFullISR(ctx)
		}})
	register(upgradeKind{upgradeStep(FeatureUpdate, "finalize feature levels (metadata.version, group.version) through the Admin API"),
		func(ctx context.Context, u Upgrader, f Fault) (string, error) {
			levels, err := ParseFeatures(f.Features)
			if err != nil {
				return "", err
			}
			return u.UpdateFeatures(ctx, levels)
		},
		func(context.Context, Upgrader, Fault) (string, error) { return "", nil }})
}

func (k upgradeKind) validate(f Fault) error {
	if f.Client != "" || f.Member != "" {
		return fmt.Errorf("fault %s acts on the cluster, not on client %q or member %q", f.Kind, f.Client, f.Member)
	}
	if f.Trigger != AtTime {
		return fmt.Errorf("fault %s is placed at a time, not on a trigger (%q)", f.Kind, f.Trigger)
	}
	switch k.kind {
	case NodeUpgrade:
		if f.Node <= 0 {
			return fmt.Errorf("fault %s needs a node id, got %d", f.Kind, f.Node)
		}
		if f.Version == "" {
			return fmt.Errorf("fault %s on node %d names no Kafka version to upgrade to", f.Kind, f.Node)
		}
	case FeatureUpdate:
		if _, err := ParseFeatures(f.Features); err != nil {
			return fmt.Errorf("fault %s: %w", f.Kind, err)
		}
	}
	return nil
}

func (k upgradeKind) upgrader(env Env, f Fault) (Upgrader, error) {
	u, ok := env.Target.(Upgrader)
	if !ok {
		return nil, errNoPart(f, "a container cluster whose nodes can be upgraded")
	}
	return u, nil
}

func (k upgradeKind) Apply(ctx context.Context, env Env, f Fault) (string, error) {
	u, err := k.upgrader(env, f)
	if err != nil {
		return "", err
	}
	return k.apply(ctx, u, f)
}

func (k upgradeKind) Heal(ctx context.Context, env Env, f Fault) (string, error) {
	u, err := k.upgrader(env, f)
	if err != nil {
		return "", err
	}
	return k.heal(ctx, u, f)
}

// FormatFeatures writes feature levels as "group.version=1,metadata.version=33",
// sorted by name.
func FormatFeatures(levels map[string]int16) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		parts = append(parts, name+"="+strconv.Itoa(int(levels[name])))
	}
	return strings.Join(parts, ",")
}

// ParseFeatures reads what FormatFeatures writes: comma-separated
// name=level pairs, at least one.
func ParseFeatures(s string) (map[string]int16, error) {
	out := map[string]int16{}
	for _, kv := range strings.Split(s, ",") {
		name, level, ok := strings.Cut(strings.TrimSpace(kv), "=")
		l, err := strconv.ParseInt(level, 10, 16)
		if !ok || name == "" || err != nil || l < 0 {
			return nil, fmt.Errorf("feature levels %q: want name=level pairs, comma-separated, levels ≥ 0 (metadata.version=33,group.version=1)", s)
		}
		out[name] = int16(l)
	}
	return out, nil
}

// RollingUpgrade is the schedule of a rolling upgrade to version (or a
// rollback of the binaries: version is then the older release): each of
// nodes replaced in turn, the first at start and each next one every after
// (a step whose node slot is still held waits for it), then, when
// features is not empty, the features finalized after the last node. Each
// step is in force for settle once it took effect (a node upgrade's heal
// then waits for a full ISR).
func RollingUpgrade(nodes []NodeID, version string, features map[string]int16, start, every, settle time.Duration) ([]Fault, error) {
	if len(nodes) == 0 && len(features) == 0 {
		return nil, errors.New("a rolling upgrade needs nodes or features")
	}
	if (len(nodes) > 0 && version == "") || start < 0 || every <= 0 || settle <= 0 {
		return nil, fmt.Errorf("a rolling upgrade needs a version for its nodes, a start ≥ 0 and positive spacing and settle times (got %q, %s, %s, %s)", version, start, every, settle)
	}
	var out []Fault
	at := start
	for _, n := range nodes {
		out = append(out, Fault{Kind: NodeUpgrade, Node: n, Version: version, At: at, For: settle})
		at += every
	}
	if len(features) > 0 {
		out = append(out, Fault{Kind: FeatureUpdate, Features: FormatFeatures(features), At: at, For: settle})
	}
	for _, f := range out {
		if err := f.Validate(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
