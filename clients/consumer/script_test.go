package consumer

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
)

// TestMachineScripts runs the heartbeat scripts in testdata/machine: the
// state machine against scripted broker answers, including answers lost,
// late and repeated, with no network. Topics a, b and c have ids 1, 2 and
// 3; a and b are known by name from the start, c only after `name c`.
//
// Commands:
//
//	new [instance=ID] [regex=RE] [assignor=NAME|none]
//	                                 a member of group g subscribed to a, b
//	                                 (server assignor uniform unless named)
//	heartbeat                        build the next heartbeat; prints it
//	answer [to=N] epoch=E [a=(0,1)] [b=(..)] [c=(..)] [empty]
//	answer [to=N] error=NAME         answer heartbeat N (default: the last)
//	lost [to=N]                      heartbeat N got no answer
//	reconcile                        carry out the plan, as the Member does
//	plan / finish                    the same in two steps (abort in between)
//	leave [stale] / poll / name c
//
// If it fails, run `go test ./clients/consumer -run MachineScripts -rewrite`
// and read the diff before accepting it.
func TestMachineScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/machine", func(t *testing.T, path string) {
		var h *harness
		var seqs []uint64
		var pending *plan
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if h == nil && d.Cmd != "new" {
				d.Fatalf(t, "start with new")
			}
			target := func() uint64 {
				if len(seqs) == 0 {
					d.Fatalf(t, "no heartbeat sent yet")
				}
				n := len(seqs)
				if d.HasArg("to") {
					d.ScanArgs(t, "to", &n)
				}
				return seqs[n-1]
			}
			switch d.Cmd {
			case "new":
				var mut []func(*machineConfig)
				if id, has := clientstest.Arg(t, d, "instance"); has {
					mut = append(mut, func(c *machineConfig) { c.instanceID = id })
				}
				if re, has := clientstest.Arg(t, d, "regex"); has {
					mut = append(mut, func(c *machineConfig) { c.topics, c.useRegex, c.regex = nil, true, re })
				}
				if name, has := clientstest.Arg(t, d, "assignor"); has {
					if name == "none" {
						name = ""
					}
					mut = append(mut, func(c *machineConfig) { c.assignor = name })
				}
				h = newHarness(t, mut...)
				seqs, pending = nil, nil
				return scriptState(h)
			case "heartbeat":
				if h.m.skipHeartbeat() {
					return fmt.Sprintf("none: %s sends no heartbeat\n%s", h.m.state, scriptState(h))
				}
				req, seq := h.m.request()
				seqs = append(seqs, seq)
				return fmt.Sprintf("#%d %s\n%s", len(seqs), scriptRequest(req), scriptState(h))
			case "answer":
				seq := target()
				var resp *kmsg.ConsumerGroupHeartbeatResponse
				if name, has := clientstest.Arg(t, d, "error"); has {
					resp = failed(clientstest.KafkaError(t, d, name))
				} else {
					var epoch int
					d.ScanArgs(t, "epoch", &epoch)
					var assigned map[topicID][]int32
					if d.HasArg("empty") {
						assigned = map[topicID][]int32{}
					}
					for name, id := range map[string]topicID{"a": idA, "b": idB, "c": idC} {
						if !d.HasArg(name) {
							continue
						}
						if assigned == nil {
							assigned = map[topicID][]int32{}
						}
						if ps := clientstest.ArgPartitions(t, d, name); len(ps) > 0 {
							assigned[id] = ps
						}
					}
					resp = ok(int32(epoch), assigned)
				}
				if seq != h.m.inflight {
					h.m.onResponse(seq, resp)
					return "dropped: not the heartbeat in flight\n" + scriptState(h)
				}
				o := h.m.onResponse(seq, resp)
				if o.loseAll != "" {
					h.owned = clients.Partitions{}
				}
				h.check()
				return scriptOutcome(o) + scriptState(h)
			case "lost":
				o := h.m.onError(target(), errors.New("connection reset"))
				return scriptOutcome(o) + scriptState(h)
			case "reconcile", "plan":
				p, unresolved, ok := h.m.nextPlan(h.owned)
				var b strings.Builder
				switch {
				case len(unresolved) > 0:
					fmt.Fprintf(&b, "waits for names of %d topic id(s)\n", len(unresolved))
				case !ok:
					b.WriteString("no plan\n")
				default:
					fmt.Fprintf(&b, "plan %d at epoch %d: revoke %s add %s\n", p.seq, p.epoch, clientstest.Parts(p.revoke), clientstest.Parts(p.add))
					if d.Cmd == "plan" {
						pending = &p
					} else {
						scriptApply(h, p)
						fmt.Fprintf(&b, "finished: %v\n", h.m.finish(p, true))
					}
				}
				return b.String() + scriptState(h)
			case "finish":
				if pending == nil {
					d.Fatalf(t, "no plan pending")
				}
				p := *pending
				pending = nil
				var b strings.Builder
				if h.m.valid(p) {
					scriptApply(h, p)
				}
				fmt.Fprintf(&b, "finished: %v\n", h.m.finish(p, true))
				return b.String() + scriptState(h)
			case "leave":
				sent := h.m.leave(d.HasArg("stale"))
				if sent {
					h.owned = clients.Partitions{}
				}
				return fmt.Sprintf("leave heartbeat due: %v\n%s", sent, scriptState(h))
			case "poll":
				return fmt.Sprintf("rejoins: %v\n%s", h.m.rejoinStale(), scriptState(h))
			case "name":
				h.m.names[idC] = "c"
				return scriptState(h)
			}
			d.Fatalf(t, "unknown command %s", d.Cmd)
			return ""
		})
	})
}

var idC = topicID{3}

func scriptApply(h *harness, p plan) {
	h.owned = h.owned.Minus(p.revoke)
	for t, ps := range p.add {
		h.owned[t] = append(h.owned[t], ps...)
		slices.Sort(h.owned[t])
	}
}

func scriptRequest(r *kmsg.ConsumerGroupHeartbeatRequest) string {
	str := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	names := "-"
	if r.SubscribedTopicNames != nil {
		names = "[" + strings.Join(r.SubscribedTopicNames, " ") + "]"
	}
	rebalance := "-"
	if r.RebalanceTimeoutMillis != -1 {
		rebalance = strconv.Itoa(int(r.RebalanceTimeoutMillis))
	}
	owned := "-"
	if r.Topics != nil {
		var parts []string
		for _, t := range r.Topics {
			parts = append(parts, fmt.Sprintf("%d:%v", t.TopicID[0], t.Partitions))
		}
		owned = "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("heartbeat member=%s epoch=%d instance=%s rack=%s rebalance=%s names=%s regex=%s assignor=%s owned=%s",
		r.MemberID, r.MemberEpoch, str(r.InstanceID), str(r.RackID), rebalance, names, str(r.SubscribedTopicRegex), str(r.ServerAssignor), owned)
}

func scriptOutcome(o outcome) string {
	var b strings.Builder
	for _, e := range o.events {
		fmt.Fprintf(&b, "event %s epoch=%d", e.Kind, e.MemberEpoch)
		if e.Err != "" {
			fmt.Fprintf(&b, " err=%s", e.Err)
		}
		if e.Partitions != nil {
			fmt.Fprintf(&b, " partitions=%s", clientstest.Parts(e.Partitions))
		}
		b.WriteString("\n")
	}
	if o.loseAll != "" {
		fmt.Fprintf(&b, "lose everything held at epoch %d: %s\n", o.lostAt, o.loseAll)
	}
	if o.backoff {
		b.WriteString("back off\n")
	}
	if o.leaveDone {
		b.WriteString("leave answered\n")
	}
	if b.Len() == 0 {
		b.WriteString("no change\n")
	}
	return b.String()
}

func scriptState(h *harness) string {
	target := "-"
	if !h.m.target.none() {
		target = clientstest.Parts(h.m.partitionsByName(h.m.target.parts))
	}
	return fmt.Sprintf("state=%s epoch=%d owned=%s target=%s\n", h.m.state, h.m.epoch, clientstest.Parts(h.owned), target)
}
