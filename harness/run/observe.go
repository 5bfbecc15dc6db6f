package run

import (
	"context"
	"errors"
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
	read   observe.Reader
	rec    *history.Recorder
	topics []string
	clock  func() time.Duration

	mu sync.Mutex // one FDescribe call at a time: the periodic loop and quiesce's checks share the process
}

func newObserver(adm *kadm.Client, bootstrap []string, rec *history.Recorder, group, protocol string, topics []string, clock func() time.Duration) *observer {
	return &observer{
		adm:    adm,
		read:   observe.Reader{Admin: adm, Bootstrap: bootstrap, Group: group, Protocol: protocol, Topics: topics},
		rec:    rec,
		topics: topics,
		clock:  clock,
	}
}

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
func (o *observer) snapshot(ctx context.Context, label string, historyLen int64) (history.Snapshot, map[string]string, []error) {
	s := history.Snapshot{Label: label, HistoryLen: historyLen, Time: o.clock()}
	var errs []error
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
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
	var ids map[string]string
	if rs, _, err := o.read.Records(ctx); err != nil {
		errs = append(errs, err)
	} else {
		s.Records, s.HasRecords = rs, true
		if ids, err = o.read.TopicIDs(ctx, o.topics, rs); err != nil {
			errs = append(errs, err)
		}
	}
	s.HistoryEnd = o.rec.Len() // with HistoryLen, brackets the read in the history
	return s, ids, errs
}
