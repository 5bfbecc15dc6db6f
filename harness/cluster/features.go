package cluster

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/groupquake/groupquake/coordinator/version"
)

// WaitFullISR returns when no partition of the cluster is under-replicated,
// bounded by NodeTimeout: what a rolling upgrade or restart waits for before
// it takes the next node down.
func (c *Cluster) WaitFullISR(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.NodeTimeout)
	defer cancel()
	if err := c.waitFullISR(ctx, nil); err != nil {
		return fmt.Errorf("waiting for a full ISR (bound NodeTimeout=%s): %w", c.cfg.NodeTimeout, err)
	}
	return nil
}

// FinalizedFeatures returns the finalized feature levels every broker
// reports (ApiVersions v3+, KIP-584), by broker id. A broker that cannot be
// asked is an error.
func (c *Cluster) FinalizedFeatures(ctx context.Context) (map[NodeID]map[string]int16, error) {
	adm, err := c.Admin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	return finalizedFeatures(ctx, adm)
}

func finalizedFeatures(ctx context.Context, adm *kadm.Client) (map[NodeID]map[string]int16, error) {
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("ApiVersions: %w", err)
	}
	out := map[NodeID]map[string]int16{}
	for _, v := range vs.Sorted() {
		if v.Err != nil {
			return nil, fmt.Errorf("ApiVersions of broker %d: %w", v.NodeID, v.Err)
		}
		levels := map[string]int16{}
		for _, f := range v.Raw().FinalizedFeatures {
			levels[f.Name] = f.MaxVersionLevel
		}
		out[v.NodeID] = levels
	}
	return out, nil
}

// UpdateFeatures finalizes the given feature levels through the Admin API
// (UpdateFeatures: an upgrade where the level rises, a safe downgrade where
// it falls, which Kafka refuses past a metadata.version that changed the
// records) and returns when every broker reports them. It says what
// changed: "metadata.version 27 (4.1-IV1) → 33 (4.4-IV2); group.version
// stays 1". A level already finalized is left alone.
func (c *Cluster) UpdateFeatures(ctx context.Context, levels map[string]int16) (string, error) {
	adm, err := c.Admin()
	if err != nil {
		return "", err
	}
	defer adm.Close()
	before, err := finalizedFeatures(ctx, adm)
	if err != nil {
		return "", err
	}
	var updates []kadm.FeatureUpdate
	var said []string
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		want := levels[name]
		cur, agreed := agreedLevel(before, name)
		switch {
		case agreed && cur == want:
			said = append(said, fmt.Sprintf("%s stays %s", name, levelName(name, want)))
			continue
		case agreed:
			said = append(said, fmt.Sprintf("%s %s → %s", name, levelName(name, cur), levelName(name, want)))
		default:
			said = append(said, fmt.Sprintf("%s → %s", name, levelName(name, want)))
		}
		u := kadm.FeatureUpdate{Feature: name, MaxVersionLevel: want, UpgradeType: 1}
		if agreed && want < cur {
			u.UpgradeType = 2 // safe downgrade: Kafka refuses a lossy one
		}
		updates = append(updates, u)
	}
	if len(updates) > 0 {
		res, err := adm.UpdateFeatures(ctx, false, updates...)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			return "", fmt.Errorf("UpdateFeatures %s refused: %w", describeLevels(levels), err)
		}
	}
	// The controller commits the change; each broker learns it from the
	// metadata log, so wait until every one reports it.
	var last map[NodeID]map[string]int16
	err = pollUntil(ctx, 300*time.Millisecond, func() error {
		now, err := finalizedFeatures(ctx, adm)
		if err != nil {
			return err
		}
		last = now
		for id, fs := range now {
			for name, want := range levels {
				if fs[name] != want {
					return fmt.Errorf("broker %d reports %s at %d, not yet %d", id, name, fs[name], want)
				}
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("features %s accepted, but not every broker reports them (%v): %w", describeLevels(levels), last, err)
	}
	c.logf("cluster %s: features: %s", c.RunID, strings.Join(said, "; "))
	return strings.Join(said, "; "), nil
}

// agreedLevel is the level of feature name when every broker reports the
// same one.
func agreedLevel(by map[NodeID]map[string]int16, name string) (int16, bool) {
	var level int16
	first := true
	for _, fs := range by {
		l := fs[name]
		if !first && l != level {
			return 0, false
		}
		level, first = l, false
	}
	return level, !first
}

func levelName(feature string, level int16) string {
	if feature == version.FeatureMetadataVersion {
		return fmt.Sprintf("%d (%s)", level, version.MetadataVersionName(level))
	}
	return fmt.Sprint(level)
}

func describeLevels(levels map[string]int16) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		parts = append(parts, name+"="+levelName(name, levels[name]))
	}
	return strings.Join(parts, ", ")
}
