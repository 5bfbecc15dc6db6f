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
	var out []Violation
	bad := func(r Rule, i int, format string, args ...any) {
		out = append(out, Violation{Rule: r, Index: i, Text: fmt.Sprintf(format, args...)})
	}
	var (
		hello      *Msg
		ready      *Msg
		pending    *Msg // the command in progress
		pendingAt  int
		unknownAt  = -1 // a probe of an unknown type awaiting its error
		unknownID  uint64
		awaitAck   uint64 // the seq of an ownership event not acknowledged yet
		awaitAckAt int
		lastSeq    uint64
		owned      = map[TP]bool{}
		ended      = -1 // closed, or the harness's crash
		endWhat    string
		stopped    = -1
		calls      = map[uint64]string{} // open calls by number → op
		firstSeen  bool
	)
	name := func(i int) string {
		e := tr[i]
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
	for i, e := range tr {
		m := e.Msg
		if !e.FromClient {
			switch {
			case m.Type == THello:
				hello = &tr[i].Msg
				pending, pendingAt = &tr[i].Msg, i
			case Commands[m.Type] != "":
				if pending != nil {
					bad(RuleAnswers, pendingAt, "command %s got no answer before the harness sent the next one %s", name(pendingAt), name(i))
				}
				if unknownAt >= 0 {
					bad(RuleUnknown, unknownAt, "the message of unknown type %q got no error with code %s before the harness sent %s", tr[unknownAt].Msg.Type, CodeUnknownMessage, name(i))
					unknownAt = -1
				}
				pending, pendingAt = &tr[i].Msg, i
			case m.Type == TAck:
				if m.Seq == awaitAck {
					awaitAck = 0
				}
			case m.Type == TCrash:
				if ended < 0 {
					ended, endWhat = i, "the harness's crash"
				}
			case !KnownToClient(m.Type):
				unknownAt, unknownID = i, m.ID
			}
			continue
		}
		if e.End {
			if pending != nil && ended < 0 && !(pending.Type == THello && ready == nil && firstSeen) {
				bad(RuleAnswers, pendingAt, "command %s was never answered: the client's stream ended first", name(pendingAt))
			}
			if unknownAt >= 0 && ended < 0 {
				bad(RuleUnknown, unknownAt, "the message of unknown type %q got no error with code %s before the stream ended", tr[unknownAt].Msg.Type, CodeUnknownMessage)
			}
			continue
		}
		if e.Err != "" || !KnownFromClient(m.Type) {
			why := e.Err
			if why == "" {
				why = fmt.Sprintf("type %q is not a message of the protocol", m.Type)
			}
			bad(RuleTypes, i, "the client wrote %q: %s", trim(e.Raw, 120), why)
			continue
		}
		if ended >= 0 {
			bad(RuleSilentAfterEnd, i, "the client wrote %s after %s %s", name(i), endWhat, name(ended))
			continue
		}
		if !firstSeen {
			firstSeen = true
			answersHello := m.Type == TReady || (m.Type == TError && hello != nil && m.ID == hello.ID)
			if !answersHello {
				bad(RuleHelloAnswer, i, "the client's first message is %s, where the answer to hello (ready, or an error with hello's id) is due", name(i))
			}
		}
		if awaitAck != 0 && (IsOwnership(m.Type) || m.Type == TPolled && touches(m.Records, tr[awaitAckAt].Msg.Partitions)) {
			bad(RuleAckWait, i, "the client wrote %s before the harness acknowledged its ownership event %s: its rebalance callback must not return, nor the partitions be used, before the ack", name(i), name(awaitAckAt))
			awaitAck = 0 // one violation per event
		}
		switch m.Type {
		case TReady, TSubscribed, TPolled, TCommitted, TClosed:
			switch {
			case pending == nil:
				bad(RuleAnswers, i, "%s answers no command: none was in progress", name(i))
			case Commands[pending.Type] != m.Type:
				bad(RuleAnswers, i, "%s where the answer to %s (%s) was due", name(i), name(pendingAt), Commands[pending.Type])
				pending = nil
			case m.ID != pending.ID:
				bad(RuleAnswers, i, "%s carries id %d where command %s was in progress", name(i), m.ID, name(pendingAt))
				pending = nil
			default:
				pending = nil
			}
			if m.Type == TReady {
				ready = &tr[i].Msg
				if hello != nil && !slices.Contains(hello.Versions, m.Version) {
					bad(RuleVersion, i, "ready names protocol version %d, which hello did not offer (%v)", m.Version, hello.Versions)
				}
			}
			if m.Type == TClosed {
				ended, endWhat = i, "closed"
			}
			if m.Type == TPolled {
				if m.Fatal {
					stopped = i
				}
				if len(m.Records) > 0 && stopped >= 0 && stopped < i {
					bad(RuleStopped, i, "%s hands out %d records after the member stopped for good at %s", name(i), len(m.Records), name(stopped))
				}
				var notOwned []string
				for _, r := range m.Records {
					tp := TP{r.Topic, r.Partition}
					if !owned[tp] {
						notOwned = append(notOwned, fmt.Sprintf("%s/%d@%d", r.Topic, r.Partition, r.Offset))
					}
				}
				if len(notOwned) > 0 {
					bad(RuleAssignedFirst, i, "%s hands out records of partitions the client does not own (never assigned, or revoked or lost before): %s", name(i), strings.Join(first(notOwned, 5), ", "))
				}
			}
		case TError:
			switch {
			case unknownAt >= 0 && (m.ID == unknownID || unknownID == 0) && m.Code == CodeUnknownMessage:
				unknownAt = -1
			case unknownAt >= 0 && m.ID == unknownID && unknownID != 0:
				bad(RuleUnknown, i, "%s answers the message of unknown type %q with code %q, want %s", name(i), tr[unknownAt].Msg.Type, m.Code, CodeUnknownMessage)
				unknownAt = -1
			case pending != nil && m.ID == pending.ID:
				if pending.Type == THello && m.Code == CodeUnsupportedVersion && hello != nil && slices.Contains(hello.Versions, Version) {
					bad(RuleVersion, i, "the client refused hello as %s although hello offered version %d", CodeUnsupportedVersion, Version)
				}
				pending = nil
			case m.ID != 0:
				bad(RuleAnswers, i, "%s answers no command in progress", name(i))
			}
			if m.Fatal {
				ended, endWhat = i, "a fatal error"
			}
		case TAssigned, TRevoked, TLost:
			if m.Seq != lastSeq+1 {
				bad(RuleSeq, i, "%s follows seq %d: ownership events are numbered 1, 2, 3, ...", name(i), lastSeq)
			}
			lastSeq = m.Seq
			awaitAck, awaitAckAt = m.Seq, i
			if len(m.Partitions) == 0 {
				bad(RuleOwnership, i, "%s names no partition: an empty callback is not reported", name(i))
			}
			for _, tp := range m.Partitions {
				switch {
				case m.Type == TAssigned && owned[tp]:
					bad(RuleOwnership, i, "%s assigns %s/%d, which the client owns already", name(i), tp.Topic, tp.Partition)
				case m.Type != TAssigned && !owned[tp]:
					bad(RuleOwnership, i, "%s gives up %s/%d, which the client does not own", name(i), tp.Topic, tp.Partition)
				}
				owned[tp] = m.Type == TAssigned
			}
			if m.Type == TAssigned && stopped >= 0 {
				bad(RuleStopped, i, "%s after the member stopped for good at %s", name(i), name(stopped))
			}
		case TStopped:
			stopped = i
		case TOwnCommit:
			if ready == nil || ready.Commits != CommitsOwn {
				bad(RuleOwnCommits, i, "%s from a client whose ready does not say commits %q", name(i), CommitsOwn)
			}
		case TCall:
			if ready == nil || ready.Calls != CallsClient {
				bad(RuleCalls, i, "%s from a client whose ready says its calls are read off the wire (calls %q)", name(i), CallsWire)
				continue
			}
			op, ok := ops[m.Op]
			switch {
			case !ok:
				bad(RuleCalls, i, "%s has op %q, not one of join, sync, heartbeat, leave, commit", name(i), m.Op)
			case m.Phase == "sent":
				if _, open := calls[m.Call]; open {
					bad(RuleCalls, i, "%s reuses the number of a call still open", name(i))
				}
				for c, o := range calls {
					if ops[o].Lane() == op.Lane() {
						bad(RuleCalls, i, "%s is sent while call %d (%s) of the same lane has no answer: answer it, or report it answered with no error code (an unknown outcome), first", name(i), c, o)
						delete(calls, c)
					}
				}
				calls[m.Call] = m.Op
			case m.Phase == "answered":
				o, open := calls[m.Call]
				switch {
				case !open:
					bad(RuleCalls, i, "%s answers a call that was never reported sent (or was answered already)", name(i))
				case o != m.Op:
					bad(RuleCalls, i, "%s answers call %d, a %s, as a %s", name(i), m.Call, o, m.Op)
				}
				delete(calls, m.Call)
			default:
				bad(RuleCalls, i, "%s has phase %q, want sent or answered", name(i), m.Phase)
			}
		}
	}
	if len(calls) > 0 {
		var open []string
		for c, o := range calls {
			open = append(open, fmt.Sprintf("%d (%s)", c, o))
		}
		slices.Sort(open)
		bad(RuleCalls, -1, "calls reported sent and never answered nor reported as unknown outcomes: %s", strings.Join(open, ", "))
	}
	return out
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
