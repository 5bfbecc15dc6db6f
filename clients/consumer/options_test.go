package consumer

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestNewChecksOptionsOnce(t *testing.T) {
	t.Parallel()
	seeds := KgoOpts(kgo.SeedBrokers("127.0.0.1:1"))
	for _, tc := range []struct {
		name  string
		group string
		opts  []Opt
		want  string // "" means valid
	}{
		{"topic names", "g", []Opt{seeds, Topics("a")}, ""},
		{"regex and range", "g", []Opt{seeds, Regex("a.*"), ServerAssignor("range")}, ""},
		{"no brokers", "g", []Opt{Topics("a")}, "no kgo options"},
		{"no subscription", "g", []Opt{seeds}, "no subscription"},
		{"names and regex", "g", []Opt{seeds, Topics("a"), Regex("b")}, "not both"},
		{"bad regex", "g", []Opt{seeds, Regex("(")}, "does not compile"},
		{"blank topic", "g", []Opt{seeds, Topics("a", " ")}, "blank name"},
		{"unknown assignor", "g", []Opt{seeds, Topics("a"), ServerAssignor("sticky")}, "not one of"},
		{"blank instance", "g", []Opt{seeds, Topics("a"), InstanceID(" ")}, "instance id is blank"},
		{"blank rack", "g", []Opt{seeds, Topics("a"), Rack(" ")}, "rack id is blank"},
		{"no group", "", []Opt{seeds, Topics("a")}, "group id is empty"},
		{"negative auto-commit", "g", []Opt{seeds, Topics("a"), AutoCommitInterval(-time.Second)}, "negative"},
		{"backoff not a range", "g", []Opt{seeds, Topics("a"), RetryBackoff(time.Second, time.Millisecond)}, "not a range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := New("m", tc.group, tc.opts...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if m.cfg.rebalanceTimeout != 5*time.Minute || !m.cfg.autoCommit {
					t.Fatalf("defaults: %+v", m.cfg)
				}
				if err := m.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				if _, err := m.Poll(context.Background()); !errors.Is(err, ErrClosed) {
					t.Fatalf("Poll after Close: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
