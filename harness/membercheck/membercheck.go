// Package membercheck is `groupquake member-check`: the conformance test of
// an implementation of the member protocol (docs/member-protocol.md). On
// the embedded cluster (no Docker) it drives the implementation's process
// through a scripted scenario per group protocol (version negotiation,
// join and consume, a message of unknown type, a commit, a rebalance with a
// groupquake member, a close, a new process and its crash), judges every
// message either way by the protocol's rules (process.Check) and both
// members' ownership by the cross-member rule (revocation before
// reassignment), then runs the member contract: a short churn run of the
// implementation beside groupquake's members, judged by every checker.
package membercheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// Config says what to check.
type Config struct {
	// Command is the implementation: one process per member.
	Command process.Command
	// Protocols are the group protocols to check; empty: both.
	Protocols []clients.Protocol
	// Kafka is the release the embedded cluster behaves as (empty: the
	// default), or the one of the container cluster Real starts.
	Kafka string
	// Cluster, when set, is the cluster to check on (used as is and not
	// closed): a real one, say. Otherwise Check starts the embedded
	// cluster, or with Real a one-node container cluster of Kafka.
	Cluster cluster.Handle
	// Real starts a one-node Kafka cluster in containers (Docker, the
	// image groupquake/kafka:Kafka) instead of the embedded one.
	Real bool
	// RunDuration is the workload of the contract run per protocol; 0
	// skips the contract runs.
	RunDuration time.Duration
	// Seed seeds the contract runs.
	Seed uint64
	// Dir holds the contract runs' directories (one per protocol).
	Dir string
	// Logf reports progress; nil is silent.
	Logf func(string, ...any)
}

// Finding is one rule judged: a violation, or, with OK, a rule the step
// saw kept.
type Finding struct {
	Protocol clients.Protocol
	Step     string
	Rule     process.Rule
	OK       bool
	Text     string
}

func (f Finding) String() string {
	mark := "FAIL"
	if f.OK {
		mark = "ok  "
	}
	return fmt.Sprintf("%s %-9s %-22s %s: %s", mark, f.Protocol, f.Step, f.Rule, f.Text)
}

// Report is what member-check found.
type Report struct {
	Findings []Finding
	// Runs are the contract runs' directories and results.
	Runs []run.Result
}

// Failed says whether any rule was broken or any contract checker failed
// or skipped.
func (r Report) Failed() bool {
	for _, f := range r.Findings {
		if !f.OK {
			return true
		}
	}
	return false
}

// Check runs the scenario on cfg.Cluster, else on a cluster of its own
// (embedded, or a container one with Real). An error means the check could
// not be carried out (no cluster); a broken rule is a Finding, not an
// error.
func Check(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if len(cfg.Protocols) == 0 {
		cfg.Protocols = []clients.Protocol{clients.Classic, clients.Consumer}
	}
	if cfg.Cluster == nil {
		var (
			h   cluster.Handle
			err error
		)
		if cfg.Real {
			h, err = cluster.Start(ctx, cluster.Config{Version: cfg.Kafka, Nodes: 1, Logf: cfg.Logf})
		} else {
			h, err = cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: cfg.Kafka})
		}
		if err != nil {
			return Report{}, fmt.Errorf("member-check: starting the cluster: %w", err)
		}
		defer h.Close(context.WithoutCancel(ctx))
		cfg.Cluster = h
	}
	e := cfg.Cluster
	var rep Report
	for _, p := range cfg.Protocols {
		s := &scenario{cfg: cfg, c: e, protocol: p, topic: "member-check-" + string(p), group: "member-check-" + string(p)}
		if err := s.run(ctx); err != nil {
			return rep, err
		}
		rep.Findings = append(rep.Findings, s.findings...)
	}
	if cfg.RunDuration > 0 {
		for _, p := range cfg.Protocols {
			res, fs, err := contract(ctx, cfg, p)
			if err != nil {
				return rep, err
			}
			rep.Runs = append(rep.Runs, res)
			rep.Findings = append(rep.Findings, fs...)
		}
	}
	return rep, nil
}

// scenario is the scripted conversation of one group protocol.
type scenario struct {
	cfg      Config
	c        cluster.Handle
	protocol clients.Protocol
	topic    string
	group    string
	findings []Finding

	events clientsLog // both members' events, in one order
	n      int        // processes started
}

// clientsLog records the events of every member of the scenario in the
// order they were reported.
type clientsLog struct{ log[clients.Event] }

func (l *clientsLog) OnEvent(e clients.Event) { l.add(e) }

// log collects entries in the order they were added, from any goroutine.
type log[T any] struct {
	mu      sync.Mutex
	entries []T
}

func (l *log[T]) add(e T) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

func (l *log[T]) all() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

func (s *scenario) bad(step string, rule process.Rule, format string, args ...any) {
	s.findings = append(s.findings, Finding{Protocol: s.protocol, Step: step, Rule: rule, Text: fmt.Sprintf(format, args...)})
}

func (s *scenario) ok(step string, rule process.Rule, format string, args ...any) {
	s.findings = append(s.findings, Finding{Protocol: s.protocol, Step: step, Rule: rule, OK: true, Text: fmt.Sprintf(format, args...)})
}

// Steps the findings name.
const (
	stepVersion   = "version"
	stepJoin      = "join-and-consume"
	stepUnknown   = "unknown-message"
	stepCommit    = "commit"
	stepRebalance = "rebalance"
	stepClose     = "close"
	stepCrash     = "crash"
	stepRules     = "transcript"
)

// Rules of the scenario beside the transcript's.
const (
	ruleStarts      process.Rule = "starts-and-subscribes"
	ruleConsumes    process.Rule = "joins-and-consumes"
	ruleCommitLands process.Rule = "commit-lands"
	ruleShares      process.Rule = "shares-the-partitions"
	ruleCloseEnds   process.Rule = "close-ends-the-stream"
	ruleCrashEnds   process.Rule = "crash-ends-the-stream"
	ruleCrashSilent process.Rule = "crash-sends-no-leave"
	ruleContract    process.Rule = "member-contract"
)

// member starts a process member of the implementation, recording its
// transcript.
func (s *scenario) member(ctx context.Context, tr *transcript, opts ...process.Opt) (*process.Member, error) {
	s.n++
	links, err := s.c.Links(fmt.Sprintf("mc-%s-%d", s.protocol, s.n))
	if err != nil {
		return nil, err
	}
	all := append([]process.Opt{
		process.Protocol(s.protocol), process.Start(s.cfg.Command.Starter()), process.Client(s.cfg.Command.Path),
		process.KgoOpts(links.KgoOpts()...), process.WithHooks(&s.events), process.WithTranscript(tr.add),
		process.SessionTimeout(6 * time.Second), process.HeartbeatInterval(500 * time.Millisecond),
		process.RebalanceTimeout(15 * time.Second), process.MaxPollInterval(20 * time.Second),
		process.AckDelay(150 * time.Millisecond), process.AnswerGrace(5 * time.Second),
	}, opts...)
	m, err := process.New("m1", s.group, []string{s.topic}, all...)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return m, m.Start(sctx)
}

// transcript collects one member's messages.
type transcript = log[process.Entry]

// partner is groupquake's own member of the protocol, the other member of
// the rebalance.
func (s *scenario) partner() (clients.Member, error) {
	kind := "classic"
	if s.protocol == clients.Consumer {
		kind = "consumer"
	}
	links, err := s.c.Links(fmt.Sprintf("mc-%s-partner", s.protocol))
	if err != nil {
		return nil, err
	}
	return kinds.Default()[kind].New(kinds.MemberSpec{
		Name: "m2", Group: s.group, Topics: []string{s.topic}, KgoOpts: links.KgoOpts(), Hooks: &s.events,
		SessionTimeout: 6 * time.Second, HeartbeatInterval: 500 * time.Millisecond, RebalanceTimeout: 15 * time.Second,
		PollInterval: 20 * time.Second, Now: time.Now,
	})
}

const partitions = 4

// run is the scripted conversation: version negotiation, join and consume,
// an unknown message, a commit, a rebalance with groupquake's member, a close,
// and a new process's crash; then every transcript is judged.
func (s *scenario) run(ctx context.Context) error {
	adm, err := s.c.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	if resp, err := adm.CreateTopic(ctx, partitions, 1, nil, s.topic); err != nil || resp.Err != nil {
		return fmt.Errorf("member-check: creating topic %s: %v", s.topic, errors.Join(err, resp.Err))
	}
	if err := s.produce(ctx, 0, 100); err != nil {
		return err
	}
	var transcripts []*transcript

	tv := &transcript{}
	transcripts = append(transcripts, tv)
	if !s.checkVersion(ctx, tv) {
		return nil
	}

	ta := &transcript{}
	transcripts = append(transcripts, ta)
	a, c := s.checkJoin(ctx, ta)
	if a == nil {
		s.judge(transcripts)
		return nil
	}
	defer a.Kill()
	s.checkUnknown(ctx, a)
	s.checkCommit(ctx, a, c.consumed)

	b, err := s.startPartner(ctx)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		b.Close(cctx)
		cancel()
	}()
	if err := s.checkRebalance(ctx, c, a, b); err != nil {
		return err
	}
	s.checkClose(ctx, c, a, b)

	// A new process, and its crash.
	s.cfg.Logf("member-check %s: a new process and its crash", s.protocol)
	tc := &transcript{}
	transcripts = append(transcripts, tc)
	a2, err := s.member(ctx, tc)
	if err != nil {
		s.bad(stepCrash, ruleStarts, "the second process did not start: %v", err)
	} else {
		defer a2.Kill()
		s.checkCrash(c, a2, b)
	}
	s.judge(transcripts)
	s.crossCheck()
	return nil
}

// checkVersion is the version negotiation: hello offers only a version no
// client speaks, and the client must refuse it with an error and end. It
// returns false when the member could not be made at all, and the scenario
// stops.
func (s *scenario) checkVersion(ctx context.Context, tv *transcript) bool {
	s.cfg.Logf("member-check %s: version negotiation", s.protocol)
	m, err := s.member(ctx, tv, process.OfferVersions(99))
	if err == nil {
		s.bad(stepVersion, process.RuleVersion, "hello offered only version 99 and the client answered ready (version %d) instead of an error with code %s", m.Ready().Version, process.CodeUnsupportedVersion)
		m.Kill()
		return true
	}
	if m == nil {
		s.bad(stepVersion, process.RuleVersion, "the member could not be made: %v", err)
		return false
	}
	if x := m.Exited(); x != nil {
		select {
		case <-x:
		case <-time.After(10 * time.Second):
		}
	}
	ans := firstFromClient(tv.all())
	switch {
	case ans == nil:
		s.bad(stepVersion, process.RuleVersion, "hello offered only version 99 and the client answered nothing (%v)", err)
	case ans.Type != process.TError || ans.Code != process.CodeUnsupportedVersion:
		s.bad(stepVersion, process.RuleVersion, "hello offered only version 99 and the client answered %s (code %q), want an error with code %s", ans.Type, ans.Code, process.CodeUnsupportedVersion)
	case !m.EndedByItself():
		s.bad(stepVersion, process.RuleVersion, "the client refused version 99 but its process did not end within 5s (it was killed)")
	default:
		s.ok(stepVersion, process.RuleVersion, "offered only version 99, the client refused with %s and ended", process.CodeUnsupportedVersion)
	}
	return true
}

// consumer polls the scenario's members and keeps the offsets the
// implementation under check (a) hands out.
type consumer struct {
	ctx      context.Context
	a        clients.Member
	consumed map[string]map[int32]int64 // topic → partition → next offset
	count    int                        // records a handed out
}

// poll polls each of ms once, for at most 250ms.
func (c *consumer) poll(ms ...clients.Member) error {
	for _, m := range ms {
		pctx, cancel := context.WithTimeout(c.ctx, 250*time.Millisecond)
		recs, err := m.Poll(pctx)
		cancel()
		if err != nil && c.ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: %w", m.Name(), err)
		}
		if m == c.a {
			for _, r := range recs {
				if c.consumed[r.Topic] == nil {
					c.consumed[r.Topic] = map[int32]int64{}
				}
				c.consumed[r.Topic][r.Partition] = r.Offset + 1
				c.count++
			}
		}
	}
	return c.ctx.Err()
}

// until polls ms until done holds (true) or d has passed (false).
func (c *consumer) until(d time.Duration, done func() bool, ms ...clients.Member) (bool, error) {
	for end := time.Now().Add(d); !done(); {
		if time.Now().After(end) {
			return false, nil
		}
		if err := c.poll(ms...); err != nil {
			return false, err
		}
	}
	return true, nil
}

// checkJoin starts the implementation's first member, which must join
// alone, own every partition and hand out the 100 records. It returns nil
// when the member did not start.
func (s *scenario) checkJoin(ctx context.Context, ta *transcript) (*process.Member, *consumer) {
	s.cfg.Logf("member-check %s: join and consume", s.protocol)
	a, err := s.member(ctx, ta)
	if err != nil {
		s.bad(stepJoin, ruleStarts, "the first member did not start: %v", err)
		return nil, nil
	}
	s.ok(stepJoin, ruleStarts, "ready (version %d, client %q, calls %q, commits %q) and subscribed", a.Ready().Version, a.Ready().Client, or(a.Ready().Calls, process.CallsWire), or(a.Ready().Commits, process.CommitsApplication))
	c := &consumer{ctx: ctx, a: a, consumed: map[string]map[int32]int64{}}
	got, err := c.until(time.Minute, func() bool { return a.Owned().Count() == partitions && c.count >= 100 }, a)
	switch {
	case err != nil:
		s.bad(stepJoin, ruleConsumes, "polling the only member of the group failed: %v", err)
	case !got:
		s.bad(stepJoin, ruleConsumes, "within 60s the only member of the group owned %d of %d partitions and handed out %d of 100 records", a.Owned().Count(), partitions, c.count)
	default:
		s.ok(stepJoin, ruleConsumes, "owned all %d partitions and handed out %d records", partitions, c.count)
	}
	return a, c
}

// checkUnknown sends a a message of a type the protocol does not have: it
// must answer with an error of code unknown-message and the message's id.
func (s *scenario) checkUnknown(ctx context.Context, a *process.Member) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	r, perr := a.Probe(pctx, "gq-unknown-probe")
	cancel()
	switch {
	case perr != nil:
		s.bad(stepUnknown, process.RuleUnknown, "%v", perr)
	case r.Type != process.TError || r.Code != process.CodeUnknownMessage:
		s.bad(stepUnknown, process.RuleUnknown, "the message of unknown type gq-unknown-probe was answered by %s (code %q), want an error with code %s", r.Type, r.Code, process.CodeUnknownMessage)
	default:
		s.ok(stepUnknown, process.RuleUnknown, "answered by an error with code %s and its id", process.CodeUnknownMessage)
	}
}

// checkCommit asks a to commit what it handed out, unless it commits on its
// own, and checks that the group's committed offsets are those.
func (s *scenario) checkCommit(ctx context.Context, a *process.Member, consumed map[string]map[int32]int64) {
	if a.CommitsOnItsOwn() {
		s.ok(stepCommit, ruleCommitLands, "the client commits on its own (ready: commits %q): no commit asked", process.CommitsOwn)
		return
	}
	if len(consumed) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_, cerr := a.Commit(cctx, consumed)
	cancel()
	if cerr != nil {
		s.bad(stepCommit, ruleCommitLands, "committing what it handed out failed: %v", cerr)
	} else if diff := s.committedDiff(ctx, consumed); diff != "" {
		s.bad(stepCommit, ruleCommitLands, "the commit was answered without error but the group's committed offsets differ: %s", diff)
	} else {
		s.ok(stepCommit, ruleCommitLands, "the committed offsets are the ones asked for")
	}
}

// startPartner starts groupquake's member of the protocol, the second
// member of the group; the caller closes it.
func (s *scenario) startPartner(ctx context.Context) (clients.Member, error) {
	s.cfg.Logf("member-check %s: rebalance with a second member", s.protocol)
	b, err := s.partner()
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = b.Start(sctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("member-check: starting groupquake's %s member: %w", s.protocol, err)
	}
	return b, nil
}

// checkRebalance checks that a and the second member b share the
// partitions after the rebalance, then produces more records and polls both
// for 15s.
func (s *scenario) checkRebalance(ctx context.Context, c *consumer, a *process.Member, b clients.Member) error {
	got, err := c.until(time.Minute, func() bool {
		return a.Owned().Count() > 0 && b.Owned().Count() > 0 && a.Owned().Count()+b.Owned().Count() == partitions
	}, a, b)
	switch {
	case err != nil:
		s.bad(stepRebalance, ruleShares, "polling during the rebalance failed: %v", err)
	case !got:
		s.bad(stepRebalance, ruleShares, "within 60s of a second member joining, the implementation owned %d and the second member %d of %d partitions", a.Owned().Count(), b.Owned().Count(), partitions)
	default:
		s.ok(stepRebalance, ruleShares, "the implementation owns %d and groupquake's member %d partitions", a.Owned().Count(), b.Owned().Count())
	}
	if err := s.produce(ctx, 100, 100); err != nil {
		return err
	}
	c.until(15*time.Second, func() bool { return false }, a, b)
	return nil
}

// checkClose closes a, whose process must end by itself, and waits for b
// to own every partition.
func (s *scenario) checkClose(ctx context.Context, c *consumer, a *process.Member, b clients.Member) {
	s.cfg.Logf("member-check %s: close", s.protocol)
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	cerr := a.Close(cctx)
	cancel()
	switch {
	case cerr != nil:
		s.bad(stepClose, ruleCloseEnds, "close: %v", cerr)
	case !a.EndedByItself():
		s.bad(stepClose, ruleCloseEnds, "the client answered closed but its stream did not end within 5s (it was killed)")
	default:
		s.ok(stepClose, ruleCloseEnds, "closed, and the process ended")
	}
	s.gone(a, "closed")
	c.until(30*time.Second, func() bool { return b.Owned().Count() == partitions }, b)
}

// checkCrash waits for the new process a2 to own partitions, tells it to
// crash: its stream must end, and it must send no leave request after.
func (s *scenario) checkCrash(c *consumer, a2 *process.Member, b clients.Member) {
	c.until(time.Minute, func() bool { return a2.Owned().Count() > 0 }, a2, b)
	s.gone(a2, "crashed by member-check")
	crashedAt := len(s.events.all())
	if !a2.Crash(10 * time.Second) {
		s.bad(stepCrash, ruleCrashEnds, "told crash, the client's stream did not end within 10s")
		a2.Kill()
	} else {
		s.ok(stepCrash, ruleCrashEnds, "told crash, the process ended")
	}
	leaves := 0
	for _, ev := range s.events.all()[crashedAt:] {
		if ev.Member == "m1" && ev.Kind == clients.Sent && ev.Op == clients.OpLeave {
			leaves++
		}
	}
	if leaves > 0 {
		s.bad(stepCrash, ruleCrashSilent, "after crash the client sent %d leave requests: a crash leaves the group to its session timeout", leaves)
	} else {
		s.ok(stepCrash, ruleCrashSilent, "no leave request after crash")
	}
}

// gone records, on behalf of a member whose process ends, the loss of what
// it still owns: a process that is gone owns nothing, whatever it said.
func (s *scenario) gone(m *process.Member, why string) {
	if owned := m.Owned(); owned.Count() > 0 {
		s.events.OnEvent(clients.Event{Kind: clients.Lost, Member: m.Name(), Partitions: owned, Why: why})
	}
}

// judge runs the protocol's rules over every transcript.
func (s *scenario) judge(trs []*transcript) {
	n := 0
	for i, t := range trs {
		for _, v := range process.Check(t.all()) {
			n++
			s.findings = append(s.findings, Finding{Protocol: s.protocol, Step: fmt.Sprintf("%s %d", stepRules, i+1), Rule: v.Rule, Text: v.Text + " [" + quote(t.all(), v.Index) + "]"})
		}
	}
	if n == 0 {
		s.ok(stepRules, "protocol-rules", "%d transcripts keep every rule of the protocol", len(trs))
	}
}

// quote is the raw line of entry i.
func quote(tr []process.Entry, i int) string {
	if i < 0 || i >= len(tr) {
		return "the whole transcript"
	}
	dir := "<"
	if !tr[i].FromClient {
		dir = ">"
	}
	return dir + " " + trim(tr[i].Raw, 240)
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// crossCheck judges revocation before reassignment over both members'
// ownership, in the order their events were reported: a partition assigned
// to one member while the other still owned it (it had not reported it
// revoked or lost, nor had its process ended).
func (s *scenario) crossCheck() {
	type tp struct {
		t string
		p int32
	}
	owns := map[tp]string{}
	n := 0
	for _, ev := range s.events.all() {
		switch ev.Kind {
		case clients.Assigned:
			for t, ps := range ev.Partitions {
				for _, p := range ps {
					if o := owns[tp{t, p}]; o != "" && o != ev.Member {
						n++
						s.bad(stepRebalance, process.RuleRevokeFirst, "%s/%d was assigned to %s while %s had not reported revoking or losing it", t, p, name(ev.Member), name(o))
					}
					owns[tp{t, p}] = ev.Member
				}
			}
		case clients.Revoked, clients.Lost:
			for t, ps := range ev.Partitions {
				for _, p := range ps {
					if owns[tp{t, p}] == ev.Member {
						delete(owns, tp{t, p})
					}
				}
			}
		}
	}
	if n == 0 {
		s.ok(stepRebalance, process.RuleRevokeFirst, "no partition assigned to one member while the other owned it")
	}
}

func name(m string) string {
	if m == "m1" {
		return "the implementation (m1)"
	}
	return "groupquake's member (" + m + ")"
}

// produce writes n records numbered from first.
func (s *scenario) produce(ctx context.Context, first, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.c.Bootstrap()...), kgo.DefaultProduceTopic(s.topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := first; i < first+n; i++ {
		recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "seq=%d", i)})
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("member-check: producing to %s: %w", s.topic, err)
	}
	return nil
}

// committedDiff compares the group's committed offsets with want.
func (s *scenario) committedDiff(ctx context.Context, want map[string]map[int32]int64) string {
	adm, err := s.c.Admin()
	if err != nil {
		return err.Error()
	}
	defer adm.Close()
	got, err := adm.FetchOffsets(ctx, s.group)
	if err != nil {
		return "reading them failed: " + err.Error()
	}
	var diffs []string
	for t, ps := range want {
		for p, o := range ps {
			r, ok := got.Lookup(t, p)
			if !ok || r.At != o {
				diffs = append(diffs, fmt.Sprintf("%s/%d: asked %d, committed %d", t, p, o, r.At))
			}
		}
	}
	slices.Sort(diffs)
	return strings.Join(diffs, "; ")
}

func firstFromClient(tr []process.Entry) *process.Msg {
	for _, e := range tr {
		if e.FromClient && !e.End && e.Err == "" {
			return &e.Msg
		}
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
