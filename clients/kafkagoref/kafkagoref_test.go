package kafkagoref

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

type events struct {
	mu sync.Mutex
	es []clients.Event
}

func (e *events) OnEvent(ev clients.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.es = append(e.es, ev)
}

func (e *events) find(k clients.Kind) (clients.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.es {
		if ev.Kind == k {
			return ev, true
		}
	}
	return clients.Event{}, false
}

// TestAssignedWithoutPoll: a generation kafka-go hands out is reported
// assigned at once, whether the application polls or not. The adapter
// first held the report until the next Poll, dating a stalled member's
// ownership later than the coordinator gave it.
func TestAssignedWithoutPoll(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got events
	m, err := New("m1", "g", []string{"t"}, Hooks(&got), KgoOpts(kgo.SeedBrokers(c.ListenAddrs()...)), Timers(6*time.Second, 200*time.Millisecond, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok := got.find(clients.Assigned); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no assignment reported within a minute without a Poll")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a, _ := got.find(clients.Assigned)
	if a.Partitions.Count() != 3 || a.Generation < 1 || m.Owned().Count() != 3 {
		t.Errorf("Assigned = %+v, Owned = %v: want the 3 partitions at a generation", a, m.Owned())
	}
	if f, ok := got.find(clients.Fetched); !ok || f.Call != 0 {
		t.Errorf("the OffsetFetch of the generation's offsets was not reported as a fact: %+v", f)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range [][]Opt{{Balancers()}, {Balancers("sticky")}} {
		if _, err := New("m1", "g", []string{"t"}, o...); err == nil {
			t.Errorf("New with %v: no error", o)
		}
	}
}
