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
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c, err := cluster.Start(ctx, cluster.Config{Version: v, Nodes: 1, BasePort: cfg.BasePort, Settings: Settings(v), Image: cfg.Image, Logf: logf})
	if err != nil {
		return rep, fmt.Errorf("start a 1-node Kafka %s cluster: %w", v, err)
	}
	defer func() {
		if cerr := c.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("close the Kafka %s cluster: %w", v, cerr)
		}
	}()
	return Run(ctx, Target{Name: "kafka", Version: v, Addr: c.Bootstrap()[0]}, secs, Options{SameHost: true, Logf: logf})
}
