package chaos

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/cluster/clustertest"
	"github.com/groupquake/groupquake/harness/run"
	"github.com/groupquake/groupquake/suites/internal/campaign"
)

// TestShareChurn runs a share group under churn on one 1-node cluster of
// the default release (CI's share run under faults): four of
// groupquake's share members on two partitions while members crash
// holding acquired records (their locks lapse and the records come back at
// a higher delivery count), restart, leave, join late, stall and freeze
// (their acknowledgements arrive after their locks lapsed). Every share
// checker must hold. The fixed seed (-chaos.share-seeds) draws a restart,
// a stall, a crash and a freeze. Then, on the same cluster, the three share
// kinds in one group (shareKinds).
func TestShareChurn(t *testing.T) {
	v := version.Default.String()
	c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 1})
	for _, seed := range shareSeeds(t) {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			campaign.RunOn(t, c, seed, run.Options{
				Scenario: run.ScenarioChurn, Kafka: v, Nodes: 1, Kinds: []string{"share"}, Members: 4, Partitions: 2,
				Duration: 25 * time.Second,
			}, 5*time.Minute)
		})
	}
	t.Run("kinds/seed-20", func(t *testing.T) {
		if !*shareJavaFlag {
			t.Skip("-chaos.share-java=false: the three share kinds in one group are not run")
		}
		if err := java.CheckJava(); err != nil {
			t.Fatalf("java-share needs a JDK and Maven: %v (-chaos.share-java=false leaves this run out)", err)
		}
		shareKinds(t, c, v, 20)
	})
}

var shareJavaFlag = flag.Bool("chaos.share-java", true, "TestShareChurn: also run share, kgo-share and java-share in one group (needs a JDK and Maven)")

// shareKinds runs the three share member kinds in one share group on c
// (TestShareChurn's cluster), under churn: groupquake's share member, kgo's
// share consumer and Kafka's KafkaShareConsumer (java-share), six members
// on two partitions, each kind twice. Every share checker must hold and
// none may be skipped, and the java-share members must have acquired and
// acknowledged records (the checkers judged them).
func shareKinds(t *testing.T, c cluster.Handle, v string, seed uint64) {
	kinds := []string{"share", "kgo-share", "java-share"}
	res := campaign.RunOn(t, c, seed, run.Options{
		Scenario: run.ScenarioChurn, Kafka: v, Nodes: 1, Kinds: kinds, Members: 6, Partitions: 2,
		Duration: 25 * time.Second,
	}, 5*time.Minute)
	nShare := 0
	for _, vd := range res.Report.Verdicts {
		if strings.HasPrefix(vd.Name, "Share") {
			nShare++
			if vd.Skipped != "" {
				t.Errorf("%s was skipped: %s", vd.Name, vd.Skipped)
			}
		}
	}
	if nShare < 6 {
		t.Errorf("%d share checkers judged the run, want every one of them", nShare)
	}
	java := map[string]bool{}
	for i := range 6 {
		if kinds[i%len(kinds)] == "java-share" {
			java["m"+strconv.Itoa(i+1)] = true
		}
	}
	acquired, acked := shareCounts(t, filepath.Join(res.Dir, run.HistoryFile), java)
	if acquired == 0 || acked == 0 {
		t.Errorf("the java-share members (%v) acquired %d records and sent %d acknowledgements: the checkers judged nothing of theirs", java, acquired, acked)
	}
	t.Logf("java-share members acquired %d records and sent %d acknowledgements", acquired, acked)
}

// shareCounts counts, in the history at path, the records the members
// named acquired (answered ShareFetches) and the acknowledgement ranges
// they sent.
func shareCounts(t *testing.T, path string, members map[string]bool) (acquired, acked int64) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e struct {
			Type, Process, F string
			Value            struct {
				Acks     []json.RawMessage
				Acquired []struct{ First, Last int64 }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		if !members[strings.Split(e.Process, "/")[0]] || (e.F != "share-fetch" && e.F != "share-ack") {
			continue
		}
		switch e.Type {
		case "invoke":
			acked += int64(len(e.Value.Acks))
		case "ok":
			for _, a := range e.Value.Acquired {
				acquired += a.Last - a.First + 1
			}
		}
	}
	return acquired, acked
}

var shareSeedsFlag = flag.String("chaos.share-seeds", "20", "TestShareChurn: seeds to run, comma-separated")

func shareSeeds(t *testing.T) []uint64 {
	var out []uint64
	for _, s := range strings.Split(*shareSeedsFlag, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatalf("-chaos.share-seeds: %q is not a seed", s)
		}
		out = append(out, n)
	}
	return out
}

// shareFreshFlag asks TestShareFresh for that many fresh share runs per
// tested release that has share groups (the nightly workflow's share hunt).
var shareFreshFlag = flag.Int("chaos.share-fresh", 0, "TestShareFresh: fresh-seed share runs per tested release with share groups")

// shareFamilies are the scenario families share runs rotate through.
var shareFamilies = []string{run.ScenarioChurn, run.ScenarioBrokerFaults, run.ScenarioMemberLinks, run.ScenarioCombined, run.ScenarioBaseline}

// shareMixes are the share member kinds a share hunt rotates through.
var shareMixes = [][]string{{"share"}, {"kgo-share", "share"}, {"kgo-share"}, {"java-share", "share", "kgo-share"}}

// TestShareFresh hunts with fresh seeds in share groups:
// -chaos.share-fresh=N runs on one 3-node cluster of every tested release
// with share groups, the families and the member kinds in turn, more
// members than partitions. Every share checker must hold; every run logs
// its rerun command and keeps its run directory under $GROUPQUAKE_RUNS_DIR.
func TestShareFresh(t *testing.T) {
	if *shareFreshFlag <= 0 {
		t.Skip("-chaos.share-fresh=N not given: the share hunt is the nightly workflow's (make share-hunt); CI runs TestShareChurn")
	}
	for _, v := range clustertest.Versions() {
		pv, err := version.Parse(v)
		if err != nil || version.CheckShareGroups(pv) != nil {
			continue
		}
		t.Run(v, func(t *testing.T) {
			c := clustertest.Start(t, cluster.Config{Version: v, Nodes: 3})
			for i := range *shareFreshFlag {
				family, kinds := shareFamilies[i%len(shareFamilies)], shareMixes[i%len(shareMixes)]
				seed := campaign.RandomSeed()
				o := run.Options{Scenario: family, Kafka: v, Nodes: 3, Kinds: kinds, Members: 5 + i%3, Partitions: int32(2 + i%2)}
				t.Run(fmt.Sprintf("%02d-%s/%s/seed-%d", i, family, strings.Join(kinds, "+"), seed), func(t *testing.T) {
					campaign.RunOn(t, c, seed, o, 15*time.Minute)
				})
			}
		})
	}
}
