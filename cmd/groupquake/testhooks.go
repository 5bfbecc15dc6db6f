//go:build groupquake_testhooks

// The interrupt tests build the command with this file (go build -tags
// groupquake_testhooks) so that they can interrupt a run in a phase of
// their choosing: GROUPQUAKE_TEST_HOLD=PHASE holds the run at the start of
// PHASE (a run's, once its marker is in the history, or a scale run's:
// "join wave", "steady", ...) until the run's context ends;
// PHASE@N holds the N-th time a phase of that name begins in the process (a
// campaign.s N-th run); a trailing "!" holds it for good, whatever the
// context says, as a teardown that never ends would. The hold is announced
// on stderr: "groupquake-test: holding in phase PHASE".

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

func init() {
	spec := os.Getenv("GROUPQUAKE_TEST_HOLD")
	if spec == "" {
		return
	}
	forever := strings.HasSuffix(spec, "!")
	spec = strings.TrimSuffix(spec, "!")
	name, nth, _ := strings.Cut(spec, "@")
	want := 1
	if nth != "" {
		n, err := strconv.Atoi(nth)
		if err != nil || n < 1 {
			panic("GROUPQUAKE_TEST_HOLD: " + spec + ": want PHASE, PHASE@N or PHASE!")
		}
		want = n
	}
	var mu sync.Mutex
	seen := 0
	onPhase = func(ctx context.Context, phase string) {
		if phase != name {
			return
		}
		mu.Lock()
		seen++
		hold := seen == want
		mu.Unlock()
		if !hold {
			return
		}
		fmt.Fprintf(os.Stderr, "groupquake-test: holding in phase %s\n", phase)
		if forever {
			select {}
		}
		<-ctx.Done()
	}
}
