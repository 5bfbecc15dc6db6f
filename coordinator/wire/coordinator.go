package wire

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator/records"
)

// Coordinator is what the server needs of a group coordinator: a pure
// state machine that the server feeds requests, time and the log, under
// its one lock. The reference coordinator (package coordinator) is one;
// package wire/reference adapts it.
//
// The server keeps these rules:
//  1. Every call is made with the server's lock held, one at a time.
//  2. The records a call returns are appended to __consumer_offsets, to
//     the partition of their group, before any response is sent. If the
//     append fails the coordinator is dropped and a new one loads the log.
//  3. After every Submit the server calls Tick with the same time, so a
//     timer due at once (a zero initial rebalance delay) fires before the
//     server waits for more input; and Tick runs every TickInterval.
//  4. After Submit and Tick the server collects Completed and answers the
//     parked requests it names.
type Coordinator interface {
	// Submit serves one group request. A nil Response parks the request: its
	// answer comes later from Completed, under Ticket. An error means the
	// coordinator cannot serve the request at all; the server closes the
	// connection, as Kafka does for a request it cannot parse.
	Submit(now time.Time, client Client, req kmsg.Request) (Outcome, error)
	// Completed returns, and forgets, the answers to parked requests.
	Completed() []Completion
	// Tick fires the timers due at now and returns the records written.
	Tick(now time.Time) []records.Record
	// Replay applies one record of __consumer_offsets while loading.
	Replay(r records.Record) error
	// Loaded ends loading (fresh sessions for the loaded members) and
	// returns the records that writes.
	Loaded(now time.Time) []records.Record
}

// Client is who sent a request: the client id of the request header and
// the address as Kafka's InetAddress.toString gives it ("/127.0.0.1").
type Client struct {
	ID   string
	Host string
}

// Ticket names a request handed to Submit.
type Ticket uint64

// Outcome is what Submit produced.
type Outcome struct {
	Ticket   Ticket
	Response kmsg.Response // nil: parked
	Records  []records.Record
}

// Completion is the answer to a parked request.
type Completion struct {
	Ticket   Ticket
	Response kmsg.Response
}

// Topics is the server's topic metadata as the coordinator may read it
// (while it is being called, under the server's lock).
type Topics interface {
	TopicByName(name string) (id [16]byte, partitions int, ok bool)
	TopicByID(id [16]byte) (name string, partitions int, ok bool)
}

// groupOf returns the group a record belongs to, which picks its
// __consumer_offsets partition.
func groupOf(k records.Key) (string, error) {
	if k == nil {
		return "", errors.New("record without a key")
	}
	if g := records.GroupOf(k); g != "" {
		return g, nil
	}
	return "", fmt.Errorf("a %v record names no group, so it has no %s partition", k.RecordType(), offsetsTopic)
}

// appendRecords writes the coordinator's records to __consumer_offsets.
// Consecutive records of one partition go into one batch, as Kafka's
// CoordinatorRuntime writes one batch per operation and partition, so a
// partition sees an operation's records all or none.
func (s *Server) appendRecords(now time.Time, recs []records.Record) error {
	if len(recs) == 0 {
		return nil
	}
	t := s.topics[offsetsTopic]
	var (
		kvs     [][2][]byte
		curPart = -1
	)
	flush := func() error {
		if len(kvs) == 0 {
			return nil
		}
		_, err := t.partitions[curPart].log.append(buildBatch(now.UnixMilli(), kvs))
		kvs = kvs[:0]
		return err
	}
	for _, r := range recs {
		g, err := groupOf(r.Key)
		if err != nil {
			return fmt.Errorf("append coordinator record: %w", err)
		}
		k, v, err := records.EncodeRecord(r)
		if err != nil {
			return fmt.Errorf("append coordinator record of group %q: %w", g, err)
		}
		p := records.PartitionFor(g, len(t.partitions))
		if p != curPart {
			if err := flush(); err != nil {
				return err
			}
			curPart = p
		}
		kvs = append(kvs, [2][]byte{k, v})
	}
	if err := flush(); err != nil {
		return err
	}
	s.notifyData()
	return nil
}

// loadCoordinator builds a coordinator and replays __consumer_offsets into
// it, partition by partition in offset order (each group lives in one
// partition, so its records replay in the order they were written), then
// calls Loaded and appends what that writes. This is "recovery from the
// log": the coordinator's state after a restart is what the log says.
func (s *Server) loadCoordinator(now time.Time) error {
	c, err := s.cfg.NewCoordinator(s.cfg.Version, topicsView{s})
	if err != nil {
		return fmt.Errorf("build coordinator: %w", err)
	}
	n := 0
	err = eachRecord(s.topics[offsetsTopic], func(kr kmsg.Record) error {
		r, err := records.DecodeRecord(kr.Key, kr.Value)
		if err != nil {
			return err
		}
		if err := c.Replay(r); err != nil {
			return err
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	s.coord = c
	if err := s.appendRecords(now, c.Loaded(now)); err != nil {
		return fmt.Errorf("append records written on load: %w", err)
	}
	s.logf("wire: coordinator loaded %d records from %s", n, offsetsTopic)
	return nil
}

// submit hands a group request to the coordinator and returns the
// response, or a channel that gets it if the request is parked. It must be
// called with s.mu held.
func (s *Server) submit(now time.Time, cl Client, req kmsg.Request) (kmsg.Response, chan kmsg.Response, error) {
	if s.coord == nil {
		return nil, nil, errors.New("no coordinator: the last load of the log failed")
	}
	o, err := s.coord.Submit(now, cl, req)
	if err != nil {
		return nil, nil, err
	}
	var wait chan kmsg.Response
	if o.Response == nil {
		wait = make(chan kmsg.Response, 1)
		s.parked[o.Ticket] = wait
	}
	recs := append(o.Records, s.coord.Tick(now)...)
	if err := s.appendRecords(now, recs); err != nil {
		s.coordinatorFailed(now, err)
		return nil, nil, err
	}
	s.deliverCompleted()
	return o.Response, wait, nil
}

// tick runs the coordinator's timers. It must be called with s.mu held.
func (s *Server) tick(now time.Time) {
	if s.coord == nil {
		return
	}
	if err := s.appendRecords(now, s.coord.Tick(now)); err != nil {
		s.coordinatorFailed(now, err)
		return
	}
	s.deliverCompleted()
}

func (s *Server) deliverCompleted() {
	for _, c := range s.coord.Completed() {
		if w, ok := s.parked[c.Ticket]; ok {
			delete(s.parked, c.Ticket)
			w <- c.Response
		}
	}
}

// coordinatorFailed handles a failed append: the coordinator took the
// records as written, so it no longer matches the log. As Kafka's
// coordinator does when a write fails (the shard is unloaded and loaded
// again from the log), it is dropped and rebuilt; the parked requests die
// with it, and their connections are closed.
func (s *Server) coordinatorFailed(now time.Time, cause error) {
	s.logf("wire: coordinator write failed, reloading it from the log: %v", cause)
	for t, w := range s.parked {
		delete(s.parked, t)
		close(w)
	}
	s.coord = nil
	if err := s.loadCoordinator(now); err != nil {
		s.coord = nil
		s.logf("wire: reload coordinator: %v; group requests fail until a restart", err)
	}
}
