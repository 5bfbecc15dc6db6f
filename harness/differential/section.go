package differential

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/vectors"
)

// flight is one request sent to the target; done closes when it has an
// answer (or failed).
type flight struct {
	ticket int
	st     Step
	req    kmsg.Request
	c      *conn
	sent   time.Time
	done   chan struct{}
	// Set before done closes.
	resp kmsg.Response
	err  error
	at   time.Time
}

// sectionRun drives one section: the reference in virtual time beside the
// target in real time.
type sectionRun struct {
	r         *runner
	name      string
	ref       *coordinator.Coordinator
	tn        *targetNames
	flights   map[int]*flight
	refParked map[int]Step // tickets the reference has not answered yet
	idle      []*conn
	probe     *conn // for describe
}

func (s *sectionRun) tnorm() targetNorm {
	n := targetNorm{n: s.tn}
	if s.r.opt.SameHost {
		n.hostAs = "/127.0.0.1"
	}
	return n
}

func (s *sectionRun) result(x Result) {
	x.Section = s.name
	s.r.rep.Results = append(s.r.rep.Results, x)
}

func (s *sectionRun) skip(st Step, why string) {
	s.result(Result{Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: why})
}

// refused reports step st, which the reference refused with err
// (coordinator.Submit: its profile does not serve the request's version).
// The target agrees if its ApiVersions does not advertise the version
// either; the request is not sent, since a broker closes the connection on
// it (SocketServer's Processor.parseRequestHeader). A target that serves it
// is a difference: the reference's version profile misses a version.
func (s *sectionRun) refused(st Step, ticket int, req kmsg.Request, err error) {
	x := Result{Pos: st.Pos, Command: command(st), Ticket: ticket, Reference: "refused: " + err.Error()}
	name, v := kmsg.NameForKey(req.Key()), req.GetVersion()
	rng, ok := s.r.served[req.Key()]
	switch {
	case !ok:
		x.Outcome, x.Target = Same, fmt.Sprintf("the target does not advertise %s (ApiVersions); not sent", name)
	case v < rng[0] || v > rng[1]:
		x.Outcome, x.Target = Same, fmt.Sprintf("the target serves %s v%d–v%d (ApiVersions), not v%d; not sent", name, rng[0], rng[1], v)
	default:
		x.Outcome, x.Target = Different, fmt.Sprintf("the target serves %s v%d–v%d (ApiVersions), v%d included; not sent", name, rng[0], rng[1], v)
	}
	s.result(x)
}

// send sends req for ticket on a connection of its own.
func (s *sectionRun) send(ctx context.Context, ticket int, st Step, req kmsg.Request) {
	f := &flight{ticket: ticket, st: st, req: req, sent: time.Now(), done: make(chan struct{})}
	s.flights[ticket] = f
	if n := len(s.idle); n > 0 {
		f.c, s.idle = s.idle[n-1], s.idle[:n-1]
	} else {
		c, err := dial(ctx, s.r.t.Addr)
		if err != nil {
			f.err, f.at = err, time.Now()
			close(f.done)
			return
		}
		f.c = c
	}
	// Parked requests may wait for the rest of the section; close (at the
	// section's end) unblocks them.
	deadline := time.Now().Add(10 * time.Minute)
	go func() {
		f.resp, f.err = f.c.do(req, clientID(st), deadline)
		f.at = time.Now()
		close(f.done)
	}()
}

// answer compares the answers the reference gave during step st: first
// (the step's own, if not parked) and every parked request it completed.
func (s *sectionRun) answer(st Step, first *coordinator.Completion) {
	for _, c := range answered(first, s.ref.Completed()) {
		x, refResp, ok := referenceResult(st, c, s.refParked)
		if !ok {
			s.result(x)
			continue
		}
		f := s.flights[x.Ticket]
		if f == nil {
			x.Outcome, x.Why = Skipped, "not sent to the target"
			s.result(x)
			continue
		}
		s.wait(f)
		s.compare(&x, refResp, f)
		s.reread(&x, refResp, f)
		s.result(x)
	}
}

// answered lists the answers the reference gave during a step, in ticket
// order: first (the step's own; nil when it was parked) and the parked
// requests it completed.
func answered(first *coordinator.Completion, completed []coordinator.Completion) []coordinator.Completion {
	var all []coordinator.Completion
	if first != nil {
		all = append(all, *first)
	}
	all = append(all, completed...)
	slices.SortFunc(all, func(a, b coordinator.Completion) int { return int(a.Ticket) - int(b.Ticket) })
	return all
}

// referenceResult is the result of the reference's answer c during step
// st, with the answer as the wire gives it back. An answer to a parked
// request names the request it completes, which parked then forgets. ok is
// false when the answer does not come back from the wire: the result is
// then Skipped and says why.
func referenceResult(st Step, c coordinator.Completion, parked map[int]Step) (x Result, resp kmsg.Response, ok bool) {
	t := int(c.Ticket)
	x = Result{Pos: st.Pos, Command: command(st), Ticket: t}
	if orig, isParked := parked[t]; isParked {
		x.Command = "→ " + command(orig)
		x.Why = fmt.Sprintf("completes #%d sent at %s", t, orig.Pos)
		delete(parked, t)
	}
	resp, err := wireRoundTrip(c.Response)
	if err != nil {
		x.Outcome, x.Why = Skipped, err.Error()
		return x, nil, false
	}
	x.Reference = format(resp, vectors.Identity{})
	return x, resp, true
}

// wait waits for f's answer, at most Options.Wait.
func (s *sectionRun) wait(f *flight) {
	t := time.NewTimer(s.r.opt.Wait)
	defer t.Stop()
	select {
	case <-f.done:
	case <-t.C:
	}
}

func (s *sectionRun) compare(x *Result, refResp kmsg.Response, f *flight) {
	select {
	case <-f.done:
	default:
		x.Outcome = Different
		x.Target = fmt.Sprintf("(no answer within %v: the target parks the request)", s.r.opt.Wait)
		return
	}
	if f.err != nil {
		x.Outcome = Different
		x.Target = "error: " + f.err.Error()
		return
	}
	s.idle = append(s.idle, f.c)
	f.c = nil
	s.tn.bind(memberID(refResp), memberID(f.resp))
	resp := f.resp
	if l, ok := resp.(*kmsg.ListGroupsResponse); ok {
		// The target lists the groups of every section; keep this one's.
		l.Groups = slices.DeleteFunc(l.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return !strings.HasPrefix(g.Group, s.tn.ns) })
	}
	x.Target = format(resp, s.tnorm())
	if x.Target == x.Reference {
		x.Outcome = Same
	} else {
		x.Outcome = Different
	}
}

// rereadTries and rereadEvery bound how long a differing read is asked
// again: about two seconds.
const (
	rereadTries = 10
	rereadEvery = 200 * time.Millisecond
)

// reread asks a read-only request (DescribeGroups, ListGroups, OffsetFetch,
// ConsumerGroupDescribe) again when the target's answer differs. Kafka's
// group coordinator serves reads from the last committed state of its
// __consumer_offsets partition, so a read sent right after a write can miss
// it (a describe answered "Dead" for a group whose JoinGroup had just been
// written, once, under CI load). A real difference persists through every
// try and is reported with the last answer.
func (s *sectionRun) reread(x *Result, refResp kmsg.Response, f *flight) {
	if x.Outcome != Different || f.err != nil || f.req == nil || s.r.opt.ReadsSeeWrites {
		return
	}
	switch f.req.(type) {
	case *kmsg.DescribeGroupsRequest, *kmsg.ListGroupsRequest, *kmsg.OffsetFetchRequest, *kmsg.ConsumerGroupDescribeRequest,
		*kmsg.ShareGroupDescribeRequest:
	default:
		return
	}
	for range rereadTries {
		time.Sleep(rereadEvery)
		ctx, cancel := context.WithTimeout(context.Background(), s.r.opt.Wait)
		c, err := dial(ctx, s.r.t.Addr)
		cancel()
		if err != nil {
			return
		}
		again := &flight{ticket: f.ticket, st: f.st, req: f.req, c: c, done: make(chan struct{})}
		again.resp, again.err = c.do(f.req, clientID(f.st), time.Now().Add(s.r.opt.Wait))
		close(again.done)
		y := Result{Pos: x.Pos, Command: x.Command, Ticket: x.Ticket, Reference: x.Reference, Why: x.Why}
		s.compare(&y, refResp, again)
		if again.err != nil {
			c.close()
		}
		if y.Outcome == Same {
			y.Why = strings.TrimSpace(y.Why + " (the target's read caught up with its last write on a re-read)")
			*x = y
			return
		}
	}
}

// finish reports the requests the reference still parks: the same if the
// target parks them too. A target answer that came only after a second of
// real time is skipped, not a difference: the target's timers ran (session,
// rebalance timeout) while the reference's clock stood still.
func (s *sectionRun) finish() {
	for _, t := range slices.Sorted(maps.Keys(s.refParked)) {
		st := s.refParked[t]
		x := Result{Pos: st.Pos, Command: command(st), Ticket: t, Reference: "parked (at the section's end)"}
		f := s.flights[t]
		if f == nil {
			continue
		}
		select {
		case <-f.done:
			if f.err != nil {
				x.Outcome, x.Target = Different, "error: "+f.err.Error()
				break
			}
			x.Target = format(f.resp, s.tnorm())
			if el := f.at.Sub(f.sent); el >= time.Second {
				x.Outcome, x.Why = Skipped, fmt.Sprintf("the target answered %s after %v of real time; the reference's clock did not move", x.Target, el.Round(time.Millisecond))
			} else {
				x.Outcome = Different
			}
		default:
			x.Outcome, x.Target = Same, "parked"
		}
		s.result(x)
	}
	s.refParked = map[int]Step{}
}

func (s *sectionRun) close() {
	if s.probe != nil {
		s.probe.close()
	}
	for _, c := range s.idle {
		c.close()
	}
	for _, f := range s.flights {
		if f.c != nil {
			f.c.close()
		}
	}
}

// wireRoundTrip encodes the reference's response at its version and
// decodes it again, as the coordinator's wire adapter would serve it: a
// field the version does not carry (JoinGroup's ProtocolType before v7)
// must not count as an answer.
func wireRoundTrip(r kmsg.Response) (kmsg.Response, error) {
	back := r.RequestKind().ResponseKind()
	back.SetVersion(r.GetVersion())
	if err := back.ReadFrom(r.AppendTo(nil)); err != nil {
		return nil, fmt.Errorf("the reference's %s v%d response does not decode: %v", kmsg.NameForKey(r.Key()), r.GetVersion(), err)
	}
	return back, nil
}

// dialProbe dials the probe, the connection of its own that describe and
// the waits use, when there is none.
func (s *sectionRun) dialProbe(ctx context.Context) error {
	if s.probe != nil {
		return nil
	}
	c, err := dial(ctx, s.r.t.Addr)
	if err != nil {
		return err
	}
	s.probe = c
	return nil
}

// ask sends req on the probe (dialProbe dials it) and drops the probe when the
// request fails, so that the next one dials again.
func (s *sectionRun) ask(req kmsg.Request) (kmsg.Response, error) {
	resp, err := s.probe.do(req, "groupquake-settle", time.Now().Add(s.r.opt.Wait))
	if err != nil {
		s.probe.close()
		s.probe = nil
	}
	return resp, err
}

// describe returns the target's view of group as a comparable string:
// state and members. It uses a connection of its own.
func (s *sectionRun) describe(ctx context.Context, group string) string {
	if err := s.dialProbe(ctx); err != nil {
		return "error: " + err.Error()
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{group}
	resp, err := s.ask(req)
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, g := range resp.(*kmsg.DescribeGroupsResponse).Groups {
		b.WriteString(g.State)
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, m.MemberID)
		}
		slices.Sort(ms)
		b.WriteString(strings.Join(ms, ","))
	}
	return b.String()
}

// awaitGroupEpoch polls ConsumerGroupDescribe on the target until group
// reaches epoch, for at most a tenth of the answer wait, as settle (a
// target that never gets there shows in the next steps' answers).
func (s *sectionRun) awaitGroupEpoch(ctx context.Context, group string, epoch int32) {
	s.pollProbe(ctx, s.r.opt.Wait/10, 20*time.Millisecond, func() kmsg.Request {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		return req
	}, func(resp kmsg.Response) bool {
		gs := resp.(*kmsg.ConsumerGroupDescribeResponse).Groups
		return len(gs) == 1 && gs[0].ErrorCode == 0 && gs[0].Epoch >= epoch
	})
}

// pollProbe sends the request that build makes on the settle probe (dialled
// again after an error) every interval until done says yes to an answer,
// for at most d or until ctx ends.
func (s *sectionRun) pollProbe(ctx context.Context, d, interval time.Duration, build func() kmsg.Request, done func(kmsg.Response) bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := s.dialProbe(ctx); err != nil {
			return
		}
		if resp, err := s.ask(build()); err == nil && done(resp) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// awaitShareInitialized polls DescribeShareGroupOffsets (all topics: the
// group's initialized share-partitions, GroupCoordinatorService's
// describeShareGroupAllOffsets) on the target until group (the vector's
// name) has every partition of want initialized, for at most
// Options.Wait: the first share group of a cluster also has the share
// coordinator create __share_group_state. A target that never gets there
// shows in the next steps' answers.
func (s *sectionRun) awaitShareInitialized(ctx context.Context, tn *targetNames, group string, want map[string][]int32) {
	s.pollProbe(ctx, s.r.opt.Wait, 50*time.Millisecond, func() kmsg.Request {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = tn.Group(group)
		g.Topics = nil // all
		req.Groups = append(req.Groups, g)
		return req
	}, func(resp kmsg.Response) bool {
		return shareHasInitialized(resp.(*kmsg.DescribeShareGroupOffsetsResponse), tn, want)
	})
}

func shareHasInitialized(resp *kmsg.DescribeShareGroupOffsetsResponse, tn *targetNames, want map[string][]int32) bool {
	have := map[string]map[int32]bool{}
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			return false
		}
		for _, t := range g.Topics {
			name := strings.TrimPrefix(t.Topic, tn.ns)
			if have[name] == nil {
				have[name] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					have[name][p.Partition] = true
				}
			}
		}
	}
	for name, ps := range want {
		for _, p := range ps {
			if !have[name][p] {
				return false
			}
		}
	}
	return true
}

// settle waits, after sending a JoinGroup that the reference parks, until
// the target shows that it took the request in (the group's state or
// members changed) or answered it, at most a tenth of Options.Wait. Steps
// travel on separate connections, and a broker serves connections in
// parallel: without this the next step could overtake the parked join.
func (s *sectionRun) settle(ctx context.Context, group, before string, f *flight) {
	deadline := time.Now().Add(s.r.opt.Wait / 10)
	for time.Now().Before(deadline) {
		select {
		case <-f.done:
			return
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
		if s.describe(ctx, group) != before {
			return
		}
	}
}
