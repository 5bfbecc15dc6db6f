package consumergroup_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// env drives one Manager for the fuzz tests: the test owns the clock and
// the metadata, every record written is kept in log, and replayDiff
// compares a fresh Manager fed the log with the live one. (The
// consumer-group vectors run through the coordinator:
// coordinator/testdata/consumer, coordinator.TestConformance.)
type env struct {
	profile version.Profile
	cfg     consumergroup.Config
	m       *consumergroup.Manager
	now     time.Time
	start   time.Time
	topics  consumergroup.Topics
	// log is every record written, in order.
	log []records.Record
	// classic stands in for the shell's classic groups: id → empty.
	classic fakeClassic
}

// fakeClassic is a ClassicGroups with groups that exist only by name.
type fakeClassic map[string]bool

func (f fakeClassic) LookupClassic(id string) (bool, bool) {
	empty, ok := f[id]
	return ok, empty
}

func (f fakeClassic) ConvertEmptyClassic(id string) []records.Record {
	if empty, ok := f[id]; !ok || !empty {
		return nil
	}
	delete(f, id)
	return []records.Record{{Key: records.GroupMetadataKey{Group: id}}}
}

func newEnv(t testing.TB, v version.Version, cfg consumergroup.Config) *env {
	e := &env{profile: v.Profile(), cfg: cfg, start: time.UnixMilli(1_700_000_000_000), classic: fakeClassic{}}
	e.now = e.start
	m, err := consumergroup.New(e.profile, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	return e
}

// topicID makes a readable, deterministic topic id from a name.
func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "topic:"+name)
	return id
}

func (e *env) topicName(id consumergroup.TopicID) string {
	if name, _, ok := e.topics.TopicByID(id); ok {
		return name
	}
	for i, b := range id {
		if b == 0 {
			return string(id[6:i]) + "(deleted)"
		}
	}
	return id.String()
}

// writeRecords appends recs to the log.
func (e *env) writeRecords(recs []records.Record) {
	e.log = append(e.log, recs...)
}

// replayed builds a fresh Manager from the log, every record through the
// byte codec first, as a coordinator loads __consumer_offsets.
func (e *env) replayed() (*consumergroup.Manager, error) {
	m, err := consumergroup.New(e.profile, e.cfg)
	if err != nil {
		return nil, err
	}
	for i, r := range e.log {
		if r.Type() == records.TypeGroupMetadata {
			continue // the shell's record
		}
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): encode: %w", i, r.Type(), err)
		}
		dec, err := records.DecodeRecord(k, v)
		if err != nil {
			return nil, fmt.Errorf("record %d (%s): decode: %w", i, r.Type(), err)
		}
		if err := m.Replay(dec); err != nil {
			return nil, fmt.Errorf("record %d (%s): %w", i, r.Type(), err)
		}
	}
	return m, nil
}

func (e *env) replayDiff() string {
	m, err := e.replayed()
	if err != nil {
		return "replay failed: " + err.Error() + "\n"
	}
	live, got := e.m.State().Format(e.topicName), m.State().Format(e.topicName)
	if live != got {
		return "replayed state differs from the live state\nlive:\n" + live + "replayed:\n" + got
	}
	return ""
}
