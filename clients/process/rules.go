package process

import (
	"fmt"
	"slices"
	"strings"
)

// A Rule of the member protocol that a transcript can break. The names are
// stable: member-check prints them, docs/member-protocol.md lists them.
type Rule string

const (
	// RuleTypes: every line of the client is a JSON object with a type the
	// protocol has.
	RuleTypes Rule = "message-types"
	// RuleHelloAnswer: the client's first message answers hello: ready, or
	// an error with hello's id.
	RuleHelloAnswer Rule = "hello-answered-first"
	// RuleVersion: ready names a version hello offered; a client offered
	// none it speaks answers an error with code unsupported_version and
	// ends.
	RuleVersion Rule = "version-negotiation"
	// RuleAnswers: every command is answered once, in order, by its answer
	// type with its id (or an error with its id), and nothing answers a
	// command that is not in progress.
	RuleAnswers Rule = "every-command-answered"
	// RuleUnknown: a harness message of a type the protocol does not have
	// is answered by an error with code unknown_message (and its id, if it
	// had one), and the client goes on.
	RuleUnknown Rule = "unknown-message-answered"
	// RuleAckWait: after an ownership event the client writes no other
	// ownership event, and hands out no record of the partitions concerned,
	// until the harness has acknowledged it (its rebalance callback returns
	// only then).
	RuleAckWait Rule = "ownership-acknowledged-before-going-on"
	// RuleSeq: ownership events are numbered 1, 2, 3, ... (seq).
	RuleSeq Rule = "ownership-seq"
	// RuleAssignedFirst: a record is handed out only for a partition the
	// client owns (assigned, and not revoked or lost since): assignment
	// before consumption, none after revocation.
	RuleAssignedFirst Rule = "assignment-before-consumption"
	// RuleOwnership: revoked and lost name only owned partitions; assigned
	// only partitions not owned.
	RuleOwnership Rule = "ownership-consistent"
	// RuleSilentAfterEnd: nothing after closed, or after the harness's
	// crash; the stream then ends.
	RuleSilentAfterEnd Rule = "silent-after-close-or-crash"
	// RuleCalls: a client that reports its calls (ready: calls "client")
	// answers each call it reported sent exactly once, with the same op, or
	// reports it answered with no error code (an unknown outcome) when it
	// stops waiting; a client whose calls the wire reports sends no call.
	RuleCalls Rule = "every-call-answered"
	// RuleOwnCommits: own-commit only from a client whose ready says
	// commits "own".
	RuleOwnCommits Rule = "own-commits-declared"
	// RuleRevokeFirst: a partition is assigned to another member only after
	// this one reported revoking or losing it (or its process ended): a
	// cross-member rule member-check judges from both members' events.
	RuleRevokeFirst Rule = "revocation-before-reassignment"
	// RuleStopped: after a fatal answer or stopped, the client hands out no
	// records and reports no assignment.
	RuleStopped Rule = "stopped-is-final"
)

// Violation is one breach of a rule, at one message of a transcript.
type Violation struct {
	Rule Rule
	// Index is the message's place in the transcript (-1: none).
	Index int
	// Text says what happened, naming the message.
	Text string
}

func (v Violation) String() string {
	if v.Index < 0 {
		return fmt.Sprintf("%s: %s", v.Rule, v.Text)
	}
	return fmt.Sprintf("%s: message %d: %s", v.Rule, v.Index, v.Text)
}

// Check judges one member's transcript (every message either way, in the
// order the harness wrote and read them) against the protocol's rules and
// returns every violation, in transcript order. A transcript cut short (a
// process killed by the harness) is judged up to where it ends.
func Check(tr []Entry) []Violation {
	c := &checker{tr: tr, unknownAt: -1, owned: map[TP]bool{}, ended: -1, stopped: -1, calls: map[uint64]string{}}
	for i, e := range tr {
		switch {
		case !e.FromClient:
			c.harness(i)
		case e.End:
			c.streamEnd()
		default:
			c.client(i)
		}
	}
	c.openCalls()
	return c.out
}

// checker is the state of Check as it walks a transcript.
type checker struct {
	tr         []Entry
	out        []Violation
	hello      *Msg
	ready      *Msg
	pending    *Msg // the command in progress
	pendingAt  int
	unknownAt  int // a probe of an unknown type awaiting its error (-1: none)
	unknownID  uint64
	awaitAck   uint64 // the seq of an ownership event not acknowledged yet
	awaitAckAt int
	lastSeq    uint64
	owned      map[TP]bool
	ended      int // closed, or the harness's crash (-1: neither)
	endWhat    string
	stopped    int
	calls      map[uint64]string // open calls by number → op
	firstSeen  bool
}

// bad records a violation of rule r at message i.
func (c *checker) bad(r Rule, i int, format string, args ...any) {
	c.out = append(c.out, Violation{Rule: r, Index: i, Text: fmt.Sprintf(format, args...)})
}

// name names message i in a violation's text: who wrote it, its type and
// its numbers.
func (c *checker) name(i int) string {
	e := c.tr[i]
	who := "harness"
	if e.FromClient {
		who = "client"
	}
	m := e.Msg
	s := who + " " + m.Type
	if m.ID != 0 {
		s += fmt.Sprintf(" id %d", m.ID)
	}
	if m.Seq != 0 {
		s += fmt.Sprintf(" seq %d", m.Seq)
	}
	if m.Call != 0 {
		s += fmt.Sprintf(" call %d", m.Call)
	}
	return "(" + s + ")"
}

// harness follows message i, one the harness wrote: a command, an ack, a
// crash or a probe of an unknown type.
func (c *checker) harness(i int) {
	m := c.tr[i].Msg
	switch {
	case m.Type == THello:
		c.hello = &c.tr[i].Msg
		c.pending, c.pendingAt = &c.tr[i].Msg, i
	case Commands[m.Type] != "":
		if c.pending != nil {
			c.bad(RuleAnswers, c.pendingAt, "command %s got no answer before the harness sent the next one %s", c.name(c.pendingAt), c.name(i))
		}
		if c.unknownAt >= 0 {
			c.bad(RuleUnknown, c.unknownAt, "the message of unknown type %q got no error with code %s before the harness sent %s", c.tr[c.unknownAt].Msg.Type, CodeUnknownMessage, c.name(i))
			c.unknownAt = -1
		}
		c.pending, c.pendingAt = &c.tr[i].Msg, i
	case m.Type == TAck:
		if m.Seq == c.awaitAck {
			c.awaitAck = 0
		}
	case m.Type == TCrash:
		if c.ended < 0 {
			c.ended, c.endWhat = i, "the harness's crash"
		}
	case !KnownToClient(m.Type):
		c.unknownAt, c.unknownID = i, m.ID
	}
}

// streamEnd judges the end of the client's stream: a command or a probe
// still unanswered there is a violation, unless the member had ended.
func (c *checker) streamEnd() {
	if c.pending != nil && c.ended < 0 && !(c.pending.Type == THello && c.ready == nil && c.firstSeen) {
		c.bad(RuleAnswers, c.pendingAt, "command %s was never answered: the client's stream ended first", c.name(c.pendingAt))
	}
	if c.unknownAt >= 0 && c.ended < 0 {
		c.bad(RuleUnknown, c.unknownAt, "the message of unknown type %q got no error with code %s before the stream ended", c.tr[c.unknownAt].Msg.Type, CodeUnknownMessage)
	}
}

// client judges message i, one the client wrote: the rules every message
// keeps, then those of its type.
func (c *checker) client(i int) {
	e := c.tr[i]
	m := e.Msg
	if e.Err != "" || !KnownFromClient(m.Type) {
		why := e.Err
		if why == "" {
			why = fmt.Sprintf("type %q is not a message of the protocol", m.Type)
		}
		c.bad(RuleTypes, i, "the client wrote %q: %s", trim(e.Raw, 120), why)
		return
	}
	if c.ended >= 0 {
		c.bad(RuleSilentAfterEnd, i, "the client wrote %s after %s %s", c.name(i), c.endWhat, c.name(c.ended))
		return
	}
	if !c.firstSeen {
		c.firstSeen = true
		answersHello := m.Type == TReady || (m.Type == TError && c.hello != nil && m.ID == c.hello.ID)
		if !answersHello {
			c.bad(RuleHelloAnswer, i, "the client's first message is %s, where the answer to hello (ready, or an error with hello's id) is due", c.name(i))
		}
	}
	if c.awaitAck != 0 && (IsOwnership(m.Type) || m.Type == TPolled && touches(m.Records, c.tr[c.awaitAckAt].Msg.Partitions)) {
		c.bad(RuleAckWait, i, "the client wrote %s before the harness acknowledged its ownership event %s: its rebalance callback must not return, nor the partitions be used, before the ack", c.name(i), c.name(c.awaitAckAt))
		c.awaitAck = 0 // one violation per event
	}
	switch m.Type {
	case TReady, TSubscribed, TPolled, TCommitted, TClosed:
		c.answer(i)
	case TError:
		c.clientError(i)
	case TAssigned, TRevoked, TLost:
		c.ownership(i)
	case TStopped:
		c.stopped = i
	case TOwnCommit:
		if c.ready == nil || c.ready.Commits != CommitsOwn {
			c.bad(RuleOwnCommits, i, "%s from a client whose ready does not say commits %q", c.name(i), CommitsOwn)
		}
	case TCall:
		c.call(i)
	}
}

// answer judges message i, the answer to a command: it must answer the
// command in progress, and what it says must hold.
func (c *checker) answer(i int) {
	m := c.tr[i].Msg
	switch {
	case c.pending == nil:
		c.bad(RuleAnswers, i, "%s answers no command: none was in progress", c.name(i))
	case Commands[c.pending.Type] != m.Type:
		c.bad(RuleAnswers, i, "%s where the answer to %s (%s) was due", c.name(i), c.name(c.pendingAt), Commands[c.pending.Type])
		c.pending = nil
	case m.ID != c.pending.ID:
		c.bad(RuleAnswers, i, "%s carries id %d where command %s was in progress", c.name(i), m.ID, c.name(c.pendingAt))
		c.pending = nil
	default:
		c.pending = nil
	}
	if m.Type == TReady {
		c.ready = &c.tr[i].Msg
		if c.hello != nil && !slices.Contains(c.hello.Versions, m.Version) {
			c.bad(RuleVersion, i, "ready names protocol version %d, which hello did not offer (%v)", m.Version, c.hello.Versions)
		}
	}
	if m.Type == TClosed {
		c.ended, c.endWhat = i, "closed"
	}
	if m.Type == TPolled {
		c.polled(i)
	}
}

// polled judges the records of polled message i: none after the member
// stopped for good, none of a partition the client does not own.
func (c *checker) polled(i int) {
	m := c.tr[i].Msg
	if m.Fatal {
		c.stopped = i
	}
	if len(m.Records) > 0 && c.stopped >= 0 && c.stopped < i {
		c.bad(RuleStopped, i, "%s hands out %d records after the member stopped for good at %s", c.name(i), len(m.Records), c.name(c.stopped))
	}
	var notOwned []string
	for _, r := range m.Records {
		tp := TP{r.Topic, r.Partition}
		if !c.owned[tp] {
			notOwned = append(notOwned, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset))
		}
	}
	if len(notOwned) > 0 {
		c.bad(RuleAssignedFirst, i, "%s hands out records of partitions the client does not own (never assigned, or revoked or lost before): %s", c.name(i), strings.Join(first(notOwned, 5), ", "))
	}
}

// clientError judges error message i: the answer to a probe of an unknown
// type, or to the command in progress; a fatal one ends the member.
func (c *checker) clientError(i int) {
	m := c.tr[i].Msg
	switch {
	case c.unknownAt >= 0 && (m.ID == c.unknownID || c.unknownID == 0) && m.Code == CodeUnknownMessage:
		c.unknownAt = -1
	case c.unknownAt >= 0 && m.ID == c.unknownID && c.unknownID != 0:
		c.bad(RuleUnknown, i, "%s answers the message of unknown type %q with code %q, want %s", c.name(i), c.tr[c.unknownAt].Msg.Type, m.Code, CodeUnknownMessage)
		c.unknownAt = -1
	case c.pending != nil && m.ID == c.pending.ID:
		if c.pending.Type == THello && m.Code == CodeUnsupportedVersion && c.hello != nil && slices.Contains(c.hello.Versions, Version) {
			c.bad(RuleVersion, i, "the client refused hello as %s although hello offered version %d", CodeUnsupportedVersion, Version)
		}
		c.pending = nil
	case m.ID != 0:
		c.bad(RuleAnswers, i, "%s answers no command in progress", c.name(i))
	}
	if m.Fatal {
		c.ended, c.endWhat = i, "a fatal error"
	}
}

// ownership judges ownership event i (assigned, revoked, lost): numbered in
// turn, naming partitions, each a change of what the client owns.
func (c *checker) ownership(i int) {
	m := c.tr[i].Msg
	if m.Seq != c.lastSeq+1 {
		c.bad(RuleSeq, i, "%s follows seq %d: ownership events are numbered 1, 2, 3, ...", c.name(i), c.lastSeq)
	}
	c.lastSeq = m.Seq
	c.awaitAck, c.awaitAckAt = m.Seq, i
	if len(m.Partitions) == 0 {
		c.bad(RuleOwnership, i, "%s names no partition: an empty callback is not reported", c.name(i))
	}
	for _, tp := range m.Partitions {
		switch {
		case m.Type == TAssigned && c.owned[tp]:
			c.bad(RuleOwnership, i, "%s assigns %s/%d, which the client owns already", c.name(i), tp.Topic, tp.Partition)
		case m.Type != TAssigned && !c.owned[tp]:
			c.bad(RuleOwnership, i, "%s gives up %s/%d, which the client does not own", c.name(i), tp.Topic, tp.Partition)
		}
		c.owned[tp] = m.Type == TAssigned
	}
	if m.Type == TAssigned && c.stopped >= 0 {
		c.bad(RuleStopped, i, "%s after the member stopped for good at %s", c.name(i), c.name(c.stopped))
	}
}

// call judges call message i, a request the client reports sent or
// answered: only from a client that said so in ready, one call open per
// lane, each answer of a call sent.
func (c *checker) call(i int) {
	m := c.tr[i].Msg
	if c.ready == nil || c.ready.Calls != CallsClient {
		c.bad(RuleCalls, i, "%s from a client whose ready says its calls are read off the wire (calls %q)", c.name(i), CallsWire)
		return
	}
	op, ok := ops[m.Op]
	switch {
	case !ok:
		c.bad(RuleCalls, i, "%s has op %q, not one of join, sync, heartbeat, leave, commit", c.name(i), m.Op)
	case m.Phase == "sent":
		if _, open := c.calls[m.Call]; open {
			c.bad(RuleCalls, i, "%s reuses the number of a call still open", c.name(i))
		}
		for n, o := range c.calls {
			if ops[o].Lane() == op.Lane() {
				c.bad(RuleCalls, i, "%s is sent while call %d (%s) of the same lane has no answer: answer it, or report it answered with no error code (an unknown outcome), first", c.name(i), n, o)
				delete(c.calls, n)
			}
		}
		c.calls[m.Call] = m.Op
	case m.Phase == "answered":
		o, open := c.calls[m.Call]
		switch {
		case !open:
			c.bad(RuleCalls, i, "%s answers a call that was never reported sent (or was answered already)", c.name(i))
		case o != m.Op:
			c.bad(RuleCalls, i, "%s answers call %d, a %s, as a %s", c.name(i), m.Call, o, m.Op)
		}
		delete(c.calls, m.Call)
	default:
		c.bad(RuleCalls, i, "%s has phase %q, want sent or answered", c.name(i), m.Phase)
	}
}

// openCalls reports the calls still open at the transcript's end.
func (c *checker) openCalls() {
	if len(c.calls) == 0 {
		return
	}
	var open []string
	for n, o := range c.calls {
		open = append(open, fmt.Sprintf("%d (%s)", n, o))
	}
	slices.Sort(open)
	c.bad(RuleCalls, -1, "calls reported sent and never answered nor reported as unknown outcomes: %s", strings.Join(open, ", "))
}

// touches says whether a record is of one of tps.
func touches(recs []Record, tps []TP) bool {
	for _, r := range recs {
		if slices.Contains(tps, TP{r.Topic, r.Partition}) {
			return true
		}
	}
	return false
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}
