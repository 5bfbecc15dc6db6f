package run_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/internal/machine"
)

// TestCheckSizeDerivesFromTheMachine: the limits that derive from the
// machine move with it, and each refusal names its flag: the embedded
// cluster's partitions with the open-file limit (the largest accepted
// passes, one more is refused), Java members in their own JVMs with memory
// (and --java-jvms shared fits more), the records of a run with memory.
func TestCheckSizeDerivesFromTheMachine(t *testing.T) {
	protocols := kinds.Default().Kinds()
	for _, k := range kinds.JavaKinds() {
		protocols[k.Name] = string(k.Protocol)
	}
	plan := func(o run.Options) run.Plan {
		t.Helper()
		o.Embedded = true
		if o.Duration == 0 {
			o.Duration = 20 * time.Second
		}
		p, err := run.NewPlan(1, o, protocols)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := machine.Machine{FDs: 1024, Memory: 4 << 30}
	// 2 members, the producer, the observer: 4 clients of 16 files, 256 reserved, 3 offsets logs.
	most := int32(1024 - 256 - 4*16 - 3)
	if err := plan(run.Options{Kinds: []string{"consumer", "classic"}, Partitions: most}).CheckSize(small); err != nil {
		t.Errorf("%d partitions refused on %d files: %v", most, small.FDs, err)
	}
	err := plan(run.Options{Kinds: []string{"consumer", "classic"}, Partitions: most + 1}).CheckSize(small)
	var se *run.SizeError
	if !errors.As(err, &se) || se.Flag != "partitions" || !strings.Contains(err.Error(), "at most 701 on the embedded cluster") {
		t.Errorf("%d partitions on %d files: %v", most+1, small.FDs, err)
	}
	if err := plan(run.Options{Kinds: []string{"consumer", "classic"}, Partitions: most + 1}).CheckSize(machine.Machine{FDs: 4096, Memory: 4 << 30}); err != nil {
		t.Errorf("a higher open-file limit still refuses: %v", err)
	}

	// 10 Java members in their own JVMs: 2.5 GB, more than half of 4 GB;
	// hosted in one JVM they fit.
	java := run.Options{Kinds: []string{"java-consumer"}, Members: 10}
	if err := plan(java).CheckSize(small); !errors.As(err, &se) || se.Flag != "members" || !strings.Contains(err.Error(), "--java-jvms shared") {
		t.Errorf("10 Java JVMs on 4 GB: %v", err)
	}
	java.JavaJVMs = kinds.JavaJVMsShared
	if err := plan(java).CheckSize(small); err != nil {
		t.Errorf("10 Java members in one JVM on 4 GB: %v", err)
	}

	// 3 hours at 1000 records a second: 10.8 M records, 32 M events, 66 GB
	// to judge.
	long := run.Options{Kinds: []string{"consumer"}, Rate: 1000, Duration: 3 * time.Hour}
	if err := plan(long).CheckSize(small); !errors.As(err, &se) || se.Flag != "rate" {
		t.Errorf("10.8 M records on 4 GB: %v", err)
	}
	if err := plan(long).CheckSize(machine.Machine{FDs: 1024, Memory: 256 << 30}); err != nil {
		t.Errorf("10.8 M records on 256 GB: %v", err)
	}
	long.Records = 1000
	if err := plan(long).CheckSize(small); err != nil {
		t.Errorf("--records 1000 bounds the run, still refused: %v", err)
	}
}
