package clientstest

import (
	"sync"
	"testing"

	"github.com/groupquake/groupquake/clients"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := clients.Heartbeat
			if i%5 == 0 {
				k = clients.Joined
			}
			r.OnEvent(clients.Event{Kind: k, Call: uint64(i)})
		}()
	}
	wg.Wait()
	all := r.All()
	if len(all) != 50 {
		t.Fatalf("All has %d events, want 50", len(all))
	}
	if j := r.Of(clients.Joined); len(j) != 10 {
		t.Errorf("Of(Joined) has %d events, want 10", len(j))
	}
	all[0].Call = 999
	if r.All()[0].Call == 999 {
		t.Error("All returned the recorder's own slice, not a copy")
	}
}
