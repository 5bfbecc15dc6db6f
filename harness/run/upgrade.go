package run

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/faults"
)

// The timing of a rolling upgrade's steps inside the workload phase (see
// upgradeSteps). A replacement took 17–27 s on the project's 2-core machine
// (graceful stop, the new container, the broker serving, a full ISR), so
// the planned spacing is a guess; the steps hold the nemesis's node slot,
// so a step whose predecessor is not done waits for it, and the workload
// phase lasts until every step has ended (nemesis.awaitPlanned), so a slow
// machine stretches the run instead of dropping a step.
const (
	// upgradeLead is how long the group works on the old release before
	// the first node is replaced.
	upgradeLead = 5 * time.Second
	// upgradeEvery is the planned spacing of the node replacements.
	upgradeEvery = 20 * time.Second
	// upgradeSettle is how long a node upgrade stays in force once the new
	// node serves, before its heal waits for a full ISR.
	upgradeSettle = time.Second
	// upgradeTail is how long the feature update stays in force: the group
	// works on the finalized release before the workload may end.
	upgradeTail = 10 * time.Second
)

// Downgrades an upgrade plan can end with (Options.Downgrade).
const (
	// DowngradeBeforeFinalize rolls the binaries back to the old release
	// after the upgrade, without finalizing: metadata.version is still the
	// old release's, so Kafka allows it.
	DowngradeBeforeFinalize = "before-finalize"
	// DowngradeAfterFinalize finalizes the new release's features first,
	// then rolls the binaries back: only where the new release's levels are
	// the old one's (a patch release of the same line); otherwise Kafka
	// refuses it or the older controllers cannot start
	// (version.CheckDowngrade), and the plan says so.
	DowngradeAfterFinalize = "after-finalize"
)

// upgradeStepCount is how many steps an upgrade of nodes as o asks has.
func upgradeStepCount(o Options, nodes int) int {
	switch o.Downgrade {
	case DowngradeBeforeFinalize:
		return 2 * nodes
	case DowngradeAfterFinalize:
		return 2*nodes + 1
	}
	return nodes + 1
}

// upgradeWorkload is the workload phase steps need as planned: the lead,
// the spacing between them, and the tail after the last.
func upgradeWorkload(steps int) time.Duration {
	return upgradeLead + time.Duration(steps-1)*upgradeEvery + upgradeTail
}

// checkUpgrade says what is wrong with an upgrade in o, before anything is
// planned.
func checkUpgrade(o Options) error {
	if o.UpgradeTo == "" {
		if o.Downgrade != "" {
			return fmt.Errorf("--downgrade %s rolls back an upgrade: it needs --upgrade-to", o.Downgrade)
		}
		return nil
	}
	switch {
	case len(o.Bootstrap) > 0:
		return errors.New("--upgrade-to replaces container nodes: it cannot upgrade an external cluster (--bootstrap)")
	case o.Embedded:
		return errors.New("--upgrade-to replaces container nodes: the embedded cluster has no Kafka binaries to upgrade")
	}
	from, to, err := version.CheckUpgradeFlags("--kafka", "--upgrade-to", o.Kafka, o.UpgradeTo)
	if err != nil {
		return err
	}
	switch o.Downgrade {
	case "", DowngradeBeforeFinalize:
	case DowngradeAfterFinalize:
		if err := version.CheckDowngrade(to, from, to.Profile().MetadataVersionLevel); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown downgrade %q: %s (binaries rolled back before the features are finalized) or %s", o.Downgrade, DowngradeBeforeFinalize, DowngradeAfterFinalize)
	}
	return nil
}

// upgradeSteps are the plan's rolling upgrade to o.UpgradeTo: every broker
// node replaced in turn (the plans' clusters combine the broker and
// controller roles, so there are no controllers to take first), then
// metadata.version and group.version finalized at the new release's latest
// production levels (coordinator/version); with a downgrade, the binaries
// rolled back to o.Kafka, before the finalization or after it.
func upgradeSteps(p Plan) ([]faults.Fault, error) {
	o := p.Options
	_, to, err := version.CheckUpgrade(o.Kafka, o.UpgradeTo)
	if err != nil {
		return nil, err
	}
	var nodes []faults.NodeID
	for i := range o.Nodes {
		nodes = append(nodes, faults.NodeID(i+1))
	}
	levels := func(v version.Version) map[string]int16 {
		prof := v.Profile()
		return map[string]int16{version.FeatureMetadataVersion: prof.MetadataVersionLevel, version.FeatureGroupVersion: prof.GroupVersionLevel}
	}
	var steps []faults.Fault
	at := upgradeLead
	add := func(version string, features map[string]int16) error {
		var ns []faults.NodeID
		if version != "" {
			ns = nodes
		}
		s, err := faults.RollingUpgrade(ns, version, features, at, upgradeEvery, upgradeSettle)
		if err != nil {
			return err
		}
		steps = append(steps, s...)
		at += time.Duration(len(s)) * upgradeEvery
		return nil
	}
	switch o.Downgrade {
	case "":
		err = add(o.UpgradeTo, levels(to))
	case DowngradeBeforeFinalize:
		err = errors.Join(add(o.UpgradeTo, nil), add(o.Kafka, nil))
	case DowngradeAfterFinalize:
		// Planned only where the finalized levels are the old release's
		// too (version.CheckDowngrade), so nothing is lowered.
		err = errors.Join(add(o.UpgradeTo, levels(to)), add(o.Kafka, nil))
	}
	if err != nil {
		return nil, err
	}
	steps[len(steps)-1].For = upgradeTail
	if need := upgradeWorkload(len(steps)); p.Workload < need {
		return nil, fmt.Errorf("a workload of %s is too short for the %d steps of this rolling upgrade of %d nodes as planned (%s before the first, %s apart, %s after the last): use --duration %s or more", p.Workload, len(steps), len(nodes), upgradeLead, upgradeEvery, upgradeTail, need)
	}
	return steps, nil
}

// FinalKafka is the Kafka release the cluster runs at the end of the plan:
// the release of its last node upgrade, else Options.Kafka.
func (p Plan) FinalKafka() string {
	v := p.Options.Kafka
	for _, f := range p.Faults {
		if f.Kind == faults.NodeUpgrade {
			v = f.Version
		}
	}
	return v
}

// FinalFeatures are the feature levels an upgrade plan leaves finalized:
// those of a cluster formatted by Options.Kafka (its latest production
// metadata.version and group.version), changed by each feature update in
// turn. Nil when the plan has no upgrade.
func (p Plan) FinalFeatures() map[string]int16 {
	if p.Options.UpgradeTo == "" {
		return nil
	}
	v, err := version.Parse(p.Options.Kafka)
	if err != nil {
		return nil
	}
	prof := v.Profile()
	out := map[string]int16{version.FeatureMetadataVersion: prof.MetadataVersionLevel, version.FeatureGroupVersion: prof.GroupVersionLevel}
	for _, f := range p.Faults {
		if f.Kind != faults.FeatureUpdate {
			continue
		}
		if l, err := faults.ParseFeatures(f.Features); err == nil {
			for k, x := range l {
				out[k] = x
			}
		}
	}
	return out
}

// UpgradeSteps are the plan's upgrade steps, in schedule order.
func (p Plan) UpgradeSteps() []faults.Fault {
	return slices.DeleteFunc(slices.Clone(p.Faults), func(f faults.Fault) bool { return f.Family() != faults.FamilyUpgrade })
}
