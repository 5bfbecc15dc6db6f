package process

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// transcript parses lines "> JSON" (the harness wrote it), "< JSON" (the
// client did) and "< END" (the client's stream ended).
func transcript(t *testing.T, text string) []Entry {
	t.Helper()
	var out []Entry
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		from := strings.HasPrefix(l, "<")
		body := strings.TrimSpace(l[1:])
		if body == "END" {
			out = append(out, Entry{FromClient: true, End: true})
			continue
		}
		m, err := Parse([]byte(body))
		e := Entry{FromClient: from, Msg: m, Raw: body}
		if err != nil {
			e.Err = err.Error()
		}
		out = append(out, e)
	}
	return out
}

const good = `
> {"type":"hello","id":1,"versions":[1],"member":"m1","group":"g","topics":["t"],"bootstrap":["127.0.0.1:1"],"group_protocol":"classic"}
< {"type":"ready","id":1,"version":1,"client":"x","calls":"client"}
> {"type":"subscribe","id":2,"topics":["t"]}
< {"type":"subscribed","id":2}
> {"type":"poll","id":3,"timeout_ms":100}
< {"type":"call","call":1,"op":"join","phase":"sent"}
< {"type":"call","call":1,"op":"join","phase":"answered","epoch":1,"member_id":"a"}
< {"type":"assigned","seq":1,"epoch":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}
> {"type":"ack","seq":1}
< {"type":"polled","id":3,"epoch":1,"records":[{"topic":"t","partition":0,"offset":0,"value":"eA=="}]}
> {"type":"gq-probe","id":4}
< {"type":"error","id":4,"code":"unknown_message","error":"unknown message type gq-probe"}
> {"type":"commit","id":5,"offsets":[{"topic":"t","partition":0,"offset":1}]}
< {"type":"call","call":2,"op":"commit","phase":"sent"}
< {"type":"call","call":2,"op":"commit","phase":"answered"}
< {"type":"committed","id":5}
> {"type":"poll","id":6,"timeout_ms":100}
< {"type":"revoked","seq":2,"epoch":1,"partitions":[{"topic":"t","partition":1}]}
> {"type":"ack","seq":2}
< {"type":"polled","id":6,"epoch":2}
> {"type":"close","id":7}
< {"type":"closed","id":7}
< END
`

// A conversation that keeps every rule holds; each rule, broken once by a
// scripted transcript, is reported with its name and the message that broke
// it.
func TestRules(t *testing.T) {
	if v := Check(transcript(t, good)); len(v) > 0 {
		t.Fatalf("a conforming transcript broke rules: %v", v)
	}
	for _, tc := range []struct {
		name, from, to string
		rule           Rule
		says           string
	}{
		{"records before the assignment", `< {"type":"assigned","seq":1,"epoch":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}
> {"type":"ack","seq":1}
< {"type":"polled","id":3,"epoch":1,"records":[{"topic":"t","partition":0,"offset":0,"value":"eA=="}]}`, `< {"type":"polled","id":3,"epoch":1,"records":[{"topic":"t","partition":0,"offset":0,"value":"eA=="}]}
> {"type":"poll","id":31,"timeout_ms":100}
< {"type":"assigned","seq":1,"epoch":1,"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":1}]}
> {"type":"ack","seq":1}
< {"type":"polled","id":31,"epoch":1}`, RuleAssignedFirst, "t/0@0"},
		{"no wait for the ack", `> {"type":"ack","seq":1}
< {"type":"polled","id":3,`, `< {"type":"polled","id":3,`, RuleAckWait, "before the harness acknowledged"},
		{"a second event before the ack", `> {"type":"ack","seq":2}`, `< {"type":"lost","seq":3,"epoch":1,"partitions":[{"topic":"t","partition":0}]}
> {"type":"ack","seq":2}
> {"type":"ack","seq":3}`, RuleAckWait, "lost seq 3"},
		{"a missing answer", `< {"type":"committed","id":5}`, ``, RuleAnswers, "commit id 5) got no answer"},
		{"a wrong id", `< {"type":"committed","id":5}`, `< {"type":"committed","id":4}`, RuleAnswers, "carries id 4"},
		{"a silent unknown", `< {"type":"error","id":4,"code":"unknown_message","error":"unknown message type gq-probe"}`, ``, RuleUnknown, "gq-probe"},
		{"a version not offered", `"version":1,"client"`, `"version":2,"client"`, RuleVersion, "version 2"},
		{"an unanswered call", `< {"type":"call","call":2,"op":"commit","phase":"answered"}`, ``, RuleCalls, "2 (commit)"},
		{"a revocation of nothing", `"partitions":[{"topic":"t","partition":1}]}
> {"type":"ack","seq":2}`, `"partitions":[{"topic":"t","partition":7}]}
> {"type":"ack","seq":2}`, RuleOwnership, "t/7"},
		{"talk after close", `< {"type":"closed","id":7}`, `< {"type":"closed","id":7}
< {"type":"revoked","seq":3,"partitions":[{"topic":"t","partition":0}]}`, RuleSilentAfterEnd, "after closed"},
		{"an unknown type from the client", `< {"type":"subscribed","id":2}`, `< {"type":"subscribed","id":2}
< {"type":"rebalanced"}`, RuleTypes, "rebalanced"},
		{"seq skipped", `"seq":2,`, `"seq":3,`, RuleSeq, "seq 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.from) {
				t.Fatalf("the good transcript has no %q", tc.from)
			}
			v := Check(transcript(t, strings.Replace(good, tc.from, tc.to, 1)))
			for _, x := range v {
				if x.Rule == tc.rule && strings.Contains(x.String(), tc.says) {
					return
				}
			}
			t.Fatalf("want a violation of %s saying %q, got %v", tc.rule, tc.says, v)
		})
	}
}

// Every message of the conforming transcript, and every message this
// package writes, follows docs/schema/member-protocol.json.
func TestMessagesFollowTheSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	b, err := os.ReadFile("../../docs/schema/member-protocol.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	const id = "https://github.com/groupquake/groupquake/docs/schema/member-protocol.json"
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{}
	for _, e := range transcript(t, good) {
		if !e.End && e.Msg.Type != "gq-probe" { // the probe is the message of unknown type
			lines = append(lines, e.Raw)
		}
	}
	for _, m := range []Msg{{Type: TPoll, ID: 3, TimeoutMS: 250}, {Type: TAck, Seq: 2}, {Type: TCrash}} {
		lines = append(lines, strings.TrimSpace(string(m.Line())))
	}
	for _, l := range lines {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(l))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(inst); err != nil {
			t.Errorf("%s does not follow the schema: %v", l, err)
		}
	}
	// And the schema refuses what the protocol does not have.
	for _, l := range []string{`{"type":"rebalanced"}`, `{"type":"assigned","seq":1,"partitions":[]}`, `{"type":"ready","id":1}`} {
		inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(l))
		if s.Validate(inst) == nil {
			t.Errorf("the schema accepts %s", l)
		}
	}
}
