package differential

import (
	"context"
	"fmt"

	"github.com/groupquake/groupquake/harness/cluster"
)

// RealConfig says how the real side's clusters are started.
type RealConfig struct {
	Image    cluster.ImageOptions
	BasePort int
	Logf     func(format string, args ...any)
}

// RunVectors replays secs against a one-node container cluster of Kafka v,
// started for the purpose with the settings the reference runs with
// (Settings) and removed before it returns, and returns the
// differential report: each answer of the broker beside the reference's
// with v's profile.
func RunVectors(ctx context.Context, v string, secs []Section, cfg RealConfig) (rep Report, err error) {
	logf := orQuiet(cfg.Logf)
	c, err := startSide(ctx, cluster.Config{Version: v, Nodes: 1, BasePort: cfg.BasePort, Settings: Settings(v), Image: cfg.Image, Logf: logf})
	if err != nil {
		return rep, err
	}
	defer closeSide(ctx, c, v, &err)
	return Run(ctx, Target{Name: "kafka", Version: v, Addr: c.Bootstrap()[0]}, secs, Options{SameHost: true, Logf: logf})
}

// orQuiet is logf, or a function that drops every line when it is nil.
func orQuiet(logf func(format string, args ...any)) func(format string, args ...any) {
	if logf == nil {
		return func(string, ...any) {}
	}
	return logf
}

// startSide starts the 1-node container cluster of one release's side
// (cfg.Version) that the side's runs use.
func startSide(ctx context.Context, cfg cluster.Config) (*cluster.Cluster, error) {
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("start a 1-node Kafka %s cluster: %w", cfg.Version, err)
	}
	return c, nil
}

// closeSide removes the cluster of Kafka v a side ran on, when the side is
// done (even when ctx ended); a failure to close is the side's error when
// it had none.
func closeSide(ctx context.Context, h cluster.Handle, v string, err *error) {
	if cerr := h.Close(context.WithoutCancel(ctx)); cerr != nil && *err == nil {
		*err = fmt.Errorf("close the Kafka %s cluster: %w", v, cerr)
	}
}
