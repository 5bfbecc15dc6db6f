package results

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

// Two runs of one scenario, each 10s of workload with one fault, 20% of it
// under the fault and 40% mid-rebalance (check.TestMeasurePressure measures
// such a run): one row, 6 faults a minute, 60% busy.
func TestWritePressure(t *testing.T) {
	p := check.Pressure{Scenario: "combined", Workload: 10 * time.Second, Faults: 1, UnderFault: 0.2, MidRebalance: 0.4, Busy: 0.6, Rebalances: 1, CoordinatorMoves: 1}
	var b bytes.Buffer
	if err := WritePressure(&b, []check.Pressure{p, p}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "combined  2     6.0") || !strings.Contains(b.String(), "60%") {
		t.Errorf("table:\n%s", b.String())
	}
}
