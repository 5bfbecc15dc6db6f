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

// upgradeWorkload is the workload phase an upgrade of nodes needs as planned.
func upgradeWorkload(nodes int) time.Duration {
	return upgradeLead + time.Duration(nodes)*upgradeEvery + upgradeTail
}

// checkUpgrade says what is wrong with an upgrade in o, before anything is
// planned.
func checkUpgrade(o Options) error {
	if o.UpgradeTo == "" {
		return nil
	}
	switch {
	case len(o.Bootstrap) > 0:
		return errors.New("--upgrade-to replaces container nodes: it cannot upgrade an external cluster (--bootstrap)")
	case o.Embedded:
		return errors.New("--upgrade-to replaces container nodes: the embedded cluster has no Kafka binaries to upgrade")
	}
	_, _, err := version.CheckUpgrade(o.Kafka, o.UpgradeTo)
	return err
}

// upgradeSteps are the plan's rolling upgrade to o.UpgradeTo: every broker
// node replaced in turn (controllers first would come first, see
// cluster.RollingUpgrade; the plans' clusters combine both roles), then
// metadata.version and group.version finalized at the new release's latest
// production levels (coordinator/version).
func upgradeSteps(p Plan) ([]faults.Fault, error) {
	o := p.Options
	to, err := version.Parse(o.UpgradeTo)
	if err != nil {
		return nil, err
	}
	var nodes []faults.NodeID
	for i := range o.Nodes {
		nodes = append(nodes, faults.NodeID(i+1))
	}
	prof := to.Profile()
	features := map[string]int16{
		version.FeatureMetadataVersion: prof.MetadataVersionLevel,
		version.FeatureGroupVersion:    prof.GroupVersionLevel,
	}
	steps, err := faults.RollingUpgrade(nodes, o.UpgradeTo, features, upgradeLead, upgradeEvery, upgradeSettle)
	if err != nil {
		return nil, err
	}
	steps[len(steps)-1].For = upgradeTail
	if need := upgradeWorkload(len(nodes)); p.Workload < need {
		return nil, fmt.Errorf("a workload of %s is too short for a rolling upgrade of %d nodes as planned (%s before the first, %s apart, %s on the finalized release): use --duration %s or more", p.Workload, len(nodes), upgradeLead, upgradeEvery, upgradeTail, need)
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

// UpgradeSteps are the plan's upgrade steps, in schedule order.
func (p Plan) UpgradeSteps() []faults.Fault {
	return slices.DeleteFunc(slices.Clone(p.Faults), func(f faults.Fault) bool { return f.Family() != faults.FamilyUpgrade })
}
