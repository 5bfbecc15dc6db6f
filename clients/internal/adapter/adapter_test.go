package adapter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/internal/option"
)

func TestCheckIdentity(t *testing.T) {
	for _, c := range []struct {
		name, group string
		topics      []string
		want        string
	}{
		{"", "g", []string{"t"}, "x: a member needs a name"},
		{"m1", "", []string{"t"}, "x: member m1 needs a group id"},
		{"m1", "g", nil, "x: member m1 needs at least one topic"},
	} {
		err := CheckIdentity("x", c.name, c.group, c.topics)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("CheckIdentity(%q, %q, %v) = %v, want %q...", c.name, c.group, c.topics, err, c.want)
		}
	}
	if err := CheckIdentity("x", "m1", "g", []string{"t"}); err != nil {
		t.Errorf("a whole identity refused: %v", err)
	}
}

// started is a Base that began (its wire set up) without a client: what
// the test's write functions report stands for the client's calls.
func started(t *testing.T, rec *clientstest.Recorder) *Base {
	t.Helper()
	b := &Base{}
	if err := b.Init("x", "m1", "g", []string{"t"}, Config{Common: option.Common{Hooks: rec, KgoOpts: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Begin("test", func(e clients.Event) { b.KeepAppCommit(e); b.Emit(e) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Begin("test", nil); err == nil || !strings.Contains(err.Error(), "already started") {
		t.Errorf("a second Begin said %v, want already started", err)
	}
	return b
}

// TestCommit: Commit sends nothing when the member is closed, when there
// is nothing to commit or no session, and otherwise returns what the
// application's OffsetCommit was answered, or says none came.
func TestCommit(t *testing.T) {
	b := started(t, &clientstest.Recorder{})
	offsets := map[string]map[int32]int64{"t": {0: 5}}
	errNone := errors.New("no session")
	live := func() (int, bool) { return 1, true }
	writes := 0
	// write stands for the client: with answer, it writes the OffsetCommit
	// through the wire and reads the answer code to it; without, it writes
	// nothing (kafka-go without a coordinator, Sarama with nothing marked).
	write := func(answer bool, code int16, err error) func(int) error {
		return func(int) error {
			writes++
			if !answer {
				return err
			}
			req := kmsg.NewPtrOffsetCommitRequest()
			req.Group = "g"
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = "t"
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Offset = 5
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			b.Wire.Response(b.Wire.Request(req), clientstest.CommitAnswer(req, code, nil))
			return err
		}
	}
	if _, err := Commit(b, offsets, func() (int, bool) { return 0, false }, errNone, write(false, 0, nil), "no commit"); err != errNone {
		t.Errorf("between sessions: %v, want %v", err, errNone)
	}
	if f, err := Commit(b, nil, live, errNone, write(false, 0, nil), "no commit"); f != nil || err != nil {
		t.Errorf("nothing to commit: %v, %v", f, err)
	}
	if writes != 0 {
		t.Fatalf("%d commits written when none was due", writes)
	}
	if _, err := Commit(b, offsets, live, errNone, write(true, kerr.IllegalGeneration.Code, nil), "no commit"); !errors.Is(err, kerr.IllegalGeneration) {
		t.Errorf("commit refused as a whole: %v, want ILLEGAL_GENERATION", err)
	}
	if f, err := Commit(b, offsets, live, errNone, write(true, 0, nil), "no commit"); err != nil || len(f["t"]) != 0 {
		t.Errorf("acknowledged commit: %v, %v", f, err)
	}
	// A commit the client writes on its own after Commit returned is not
	// the application's: its answer is not kept for the next Commit.
	write(true, kerr.IllegalGeneration.Code, nil)(0)
	if _, err := Commit(b, offsets, live, errNone, write(false, 0, errors.New("broken pipe")), "no commit"); err == nil || err.Error() != "no commit: broken pipe" {
		t.Errorf("unanswered commit that failed: %v, want no commit: broken pipe", err)
	}
	if _, err := Commit(b, offsets, live, errNone, write(false, 0, nil), "no commit"); err == nil || err.Error() != "no commit" {
		t.Errorf("unanswered commit: %v, want no commit", err)
	}
	b.Run(func(ctx context.Context) { defer close(b.Done); <-ctx.Done() })
	if !b.BeginClose() {
		t.Fatal("BeginClose of a running member said there was nothing to close")
	}
	if b.BeginClose() {
		t.Error("a second BeginClose said there was something to close")
	}
	b.Stop()
	if _, err := Commit(b, offsets, live, errNone, write(false, 0, nil), "no commit"); err == nil || !strings.Contains(err.Error(), "is closed") {
		t.Errorf("commit after close: %v, want closed", err)
	}
	if writes != 5 {
		t.Errorf("%d commits written, want 5", writes)
	}
}

type int16Err int16

func (e int16Err) Error() string { return "int16 error" }

type intErr int

func (e intErr) Error() string { return "int error" }

// TestKafkaCode reads the Kafka error out of a client's error of either
// width (Sarama's KError is an int16, kafka-go's Error an int), wrapped or
// not, and none out of another error.
func TestKafkaCode(t *testing.T) {
	if c, ok := KafkaCode[int16Err](fmt.Errorf("commit: %w", int16Err(25))); !ok || c != 25 {
		t.Errorf("wrapped int16 error: %d %v, want 25 true", c, ok)
	}
	if c, ok := KafkaCode[intErr](intErr(22)); !ok || c != 22 {
		t.Errorf("int error: %d %v, want 22 true", c, ok)
	}
	if c, ok := KafkaCode[intErr](int16Err(25)); ok {
		t.Errorf("an error of another type gave code %d", c)
	}
}
