package differential

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
)

// Model gives, for every vector step, the answer Run compares a target
// with: run beside the embedded cluster (the reference served over the
// wire), Run's reference column and Model's agree result by result, and
// every answer records what the reference wrote for it.
func TestModelIsRunsReference(t *testing.T) {
	secs, err := Vectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"4.1.2", "4.4.0"} {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			emb, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: v})
			if err != nil {
				t.Fatal(err)
			}
			defer emb.Close(context.Background())
			rep, err := Run(ctx, Target{Name: "embedded", Version: v, Addr: emb.Bootstrap()[0]}, secs, Options{Wait: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			model, err := Model(version.MustParse(v).Profile(), secs, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(model) != len(rep.Results) {
				t.Fatalf("Model gave %d results, Run %d", len(model), len(rep.Results))
			}
			withRecords := 0
			for i, m := range model {
				r := rep.Results[i]
				if m.Pos != r.Pos || m.Ticket != r.Ticket || m.Command != r.Command || m.Outcome == Different ||
					(m.Outcome == Skipped) != (r.Outcome == Skipped) || (m.Outcome != Skipped && m.Reference != r.Reference) {
					t.Errorf("result %d: Model %s #%d %q %s %q, Run %s #%d %q %s %q", i, m.Pos, m.Ticket, m.Command, m.Outcome, m.Reference, r.Pos, r.Ticket, r.Command, r.Outcome, r.Reference)
				}
				if m.Outcome != Skipped && m.Target != m.Reference {
					t.Errorf("%s: Model's target %q is not its reference %q", m.Pos, m.Target, m.Reference)
				}
				if strings.Contains(m.Records, "ConsumerGroupMetadata") {
					withRecords++
				}
			}
			if withRecords == 0 {
				t.Error("no answer carries a ConsumerGroupMetadata record")
			}
			t.Logf("%d results, %d same, %d different, %d skipped on the embedded cluster", len(rep.Results), rep.Count(Same), rep.Count(Different), rep.Count(Skipped))
		})
	}
}
