package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/observe"
)

// observer reads the group from outside, straight to the brokers (never
// through a member's links): descriptions and committed offsets during the
// run, recorded as FDescribe calls of process "observer", and at the end the
// snapshot of observations.json, with the group's records from its
// __consumer_offsets partition and the ids of the topics they name. The
// reading itself is package observe's, shared with `groupquake replay`.
type observer struct {
	adm    *kadm.Client
	read   groupReader
	rec    *history.Recorder
	topics []string
	clock  func() time.Duration

	mu sync.Mutex // one FDescribe call at a time: the periodic loop and quiesce's checks share the process
}

func newObserver(adm *kadm.Client, bootstrap []string, rec *history.Recorder, group, protocol string, topics []string, clock func() time.Duration) *observer {
	return &observer{
		adm:    adm,
		read:   &observe.Reader{Admin: adm, Bootstrap: bootstrap, Group: group, Protocol: protocol, Topics: topics},
		rec:    rec,
		topics: topics,
		clock:  clock,
	}
}

// groupReader is how the observer reads the group (observe.Reader; a
// scripted one in tests).
type groupReader interface {
	Describe(ctx context.Context) (*history.GroupDescription, error)
	Committed(ctx context.Context) ([]history.OffsetAt, error)
	Records(ctx context.Context) ([]history.Record, int32, error)
	TopicIDs(ctx context.Context, topics []string, recs []history.Record) (map[string]string, error)
}

// snapshotTries is how many times snapshot reads the group before it gives
// up on a log that keeps moving.
const snapshotTries = 3

// observe records one FDescribe call.
func (o *observer) observe(ctx context.Context, why string) (*history.Describe, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := o.rec.Invoke("observer", history.FDescribe, history.Describe{}, why); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d history.Describe
	g, gerr := o.read.Describe(ctx)
	c, cerr := o.read.Committed(ctx)
	d.Group = g
	if cerr == nil {
		d.Committed, d.HasCommitted = c, true
	}
	if err := errors.Join(gerr, cerr); err != nil {
		d.Error = err.Error()
		if g == nil && cerr != nil {
			_, rerr := o.rec.Fail("observer", d, "describe and offset fetch failed")
			return nil, rerr
		}
	}
	_, err := o.rec.OK("observer", d, "")
	return &d, err
}

// loop observes every interval until ctx ends.
func (o *observer) loop(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := o.observe(ctx, "periodic observation"); err != nil {
			return err
		}
	}
}

// snapshot takes the final reads for observations.json. historyLen is the
// number of events recorded before it started (Recorder.Len()); it sets
// HistoryEnd to the number recorded once it has read. It also
// returns the topic name → id mapping read with the records (nil when it
// could not be read), which the replay needs to name the topics of
// consumer-group records.
//
// The description, the committed offsets and the records are three reads,
// and RecoveredStateMatchesLog compares the replay of the records with the
// other two: they must show one state of the group. So the records are
// read before and after the other two, and the snapshot is taken again
// when the log moved in between (a member joining or committing meanwhile:
// seen on 4.1.2, a member back from a whole-cluster outage joined between a
// checkpoint's description and its records). When it keeps moving, the
// records are left out (HasRecords false) and an error says why: no replay
// is compared with a description of another state.
func (o *observer) snapshot(parent context.Context, label string, historyLen int64) (history.Snapshot, map[string]string, []error) {
	ctx, cancel := context.WithTimeout(parent, snapshotBound)
	defer cancel()
	began := time.Now()
	var s history.Snapshot
	var errs []error
	for try := 1; ; try++ {
		s = history.Snapshot{Label: label, HistoryLen: historyLen, Time: o.clock()}
		errs = nil
		before, _, berr := o.read.Records(ctx)
		if g, err := o.read.Describe(ctx); err != nil {
			errs = append(errs, err)
		} else {
			s.Group = g
		}
		if c, err := o.read.Committed(ctx); err != nil {
			errs = append(errs, err)
		} else {
			s.Committed, s.HasCommitted = c, true
		}
		rs, _, err := o.read.Records(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if berr == nil && sameLog(before, rs) {
			s.Records, s.HasRecords = rs, true
			break
		}
		if try == snapshotTries {
			errs = append(errs, fmt.Errorf("snapshot %s: the group's __consumer_offsets records changed while the group was read, %d times in a row (%d records, then %d): records left out, so that no replay is compared with another state", label, try, len(before), len(rs)))
			break
		}
	}
	var ids map[string]string
	if s.HasRecords {
		var err error
		if ids, err = o.read.TopicIDs(ctx, o.topics, s.Records); err != nil {
			errs = append(errs, err)
		}
	}
	s.HistoryEnd = o.rec.Len() // with HistoryLen, brackets the read in the history
	if len(errs) > 0 && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		var left []string
		if s.Group == nil {
			left = append(left, "the group's description")
		}
		if !s.HasCommitted {
			left = append(left, "its committed offsets")
		}
		if !s.HasRecords {
			left = append(left, "its __consumer_offsets records")
		}
		errs = append(errs, fmt.Errorf("snapshot %s: its reads timed out after %s (bound %s), without %s", label, time.Since(began).Round(time.Millisecond), snapshotBound, strings.Join(left, ", ")))
	}
	return s, ids, errs
}

// snapshotBound is how long a snapshot's reads may take, all tries
// together (a variable for the tests).
var snapshotBound = 60 * time.Second

// sameLog reports whether two reads of the group's records saw the same
// log: as many records, the last at the same offset.
func sameLog(a, b []history.Record) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || (a[len(a)-1].Partition == b[len(b)-1].Partition && a[len(a)-1].Offset == b[len(b)-1].Offset)
}
