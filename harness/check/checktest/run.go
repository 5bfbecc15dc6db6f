package checktest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// RunPlan is what the tests read of a recorded run's plan.json (the one
// harness/run writes): the group, its topics and members, and its timers.
type RunPlan struct {
	Group   string              `json:"group"`
	Topics  []history.TopicPlan `json:"topics"`
	Members []struct {
		Name, Kind, Protocol string
	} `json:"members"`
	Timers struct {
		Session   time.Duration `json:"session_timeout"`
		Heartbeat time.Duration `json:"heartbeat_interval"`
		Rebalance time.Duration `json:"rebalance_timeout"`
		Slack     time.Duration `json:"convergence_slack"`
	} `json:"timers"`
}

// ReadPlan reads the plan.json of the run directory dir.
func ReadPlan(t testing.TB, dir string) RunPlan {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p RunPlan
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// History is the plan as the checkers take it.
func (p RunPlan) History() history.Plan {
	return history.Plan{Group: p.Group, Topics: p.Topics, SessionTimeout: p.Timers.Session,
		HeartbeatInterval: p.Timers.Heartbeat, RebalanceTimeout: p.Timers.Rebalance, ConvergenceSlack: p.Timers.Slack}
}
