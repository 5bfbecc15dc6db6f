package results

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/groupquake/groupquake/harness/check"
)

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }

// WriteUpgrade prints an upgrade run's impact beside its baseline's (the
// same workload on the old release, no upgrade), as check.MeasureImpact
// read them: each step with its times and effect, every rebalance with the
// step it came in and how long each partition stopped, and both runs'
// totals.
func WriteUpgrade(w io.Writer, upgrade, baseline check.Impact) error {
	var b strings.Builder
	b.WriteString("upgrade steps:\n")
	for _, s := range upgrade.Steps {
		status := "ok"
		if !s.OK {
			status = "FAILED"
		}
		fmt.Fprintf(&b, "  %-8s %s: began %s, took effect %s, ended %s", status, s, ms(s.Start), timeOrNone(s.Applied), timeOrNone(s.End))
		if s.Applied >= 0 {
			fmt.Fprintf(&b, " (took %s)", ms(s.Applied-s.Start))
		}
		b.WriteString("\n")
		if s.Effect != "" {
			fmt.Fprintf(&b, "           %s\n", s.Effect)
		}
		if s.Error != "" {
			fmt.Fprintf(&b, "           error: %s\n", s.Error)
		}
	}
	write := func(name string, im check.Impact) {
		fmt.Fprintf(&b, "%s: %d rebalances from the workload on (workload %s); partition stops in them: %d, mean %s, p99 %s, max %s, total %s\n",
			name, len(im.Rebalances), ms(im.Workload), im.PartitionStops.Count, ms(im.PartitionStops.Mean), ms(im.PartitionStops.P99), ms(im.PartitionStops.Max), ms(im.PartitionStops.Total))
		for _, r := range im.Rebalances {
			in := "outside any upgrade step"
			switch {
			case r.Step != "":
				in = "during " + r.Step
			case len(im.Steps) == 0:
				in = "no upgrade"
			}
			fmt.Fprintf(&b, "  epoch %d first seen at %s (event %d), %s", r.Epoch, ms(r.At), r.Event, in)
			if len(r.Stops) == 0 {
				b.WriteString(": no partition stopped\n")
				continue
			}
			var parts []string
			for _, st := range r.Stops {
				parts = append(parts, fmt.Sprintf("%s %s", st.Partition, ms(st.Duration)))
			}
			fmt.Fprintf(&b, ": partitions stopped %s\n", strings.Join(parts, ", "))
		}
	}
	write("upgrade", upgrade)
	write("baseline (no upgrade)", baseline)
	_, err := io.WriteString(w, b.String())
	return err
}

func timeOrNone(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return ms(d)
}
