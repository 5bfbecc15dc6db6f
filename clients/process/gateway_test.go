package process

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/clients/clientstest"
	"github.com/groupquake/groupquake/clients/wiretap"
)

// keys records the keys of the requests that went through the gateway.
type keys struct {
	mu   sync.Mutex
	seen map[int16]int
}

func (k *keys) Wants(int16) bool { return true }
func (k *keys) Request(r kmsg.Request) any {
	k.mu.Lock()
	k.seen[r.Key()]++
	k.mu.Unlock()
	return nil
}
func (k *keys) Response(any, kmsg.Response) {}
func (k *keys) Lost(any, error)             {}
func (k *keys) Broken(err error)            { panic(err) }

// A client that knows only the gateway reaches every broker of a cluster
// through it: the addresses it learns from Metadata and FindCoordinator are
// the gateway's, every connection is dialed with the member's dial function
// (its links), and a group consumer works end to end.
func TestGatewayCarriesAClientThroughItsDialer(t *testing.T) {
	c := clientstest.NewCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(6, "t"))
	defer c.Close()
	brokers := c.ListenAddrs()

	var mu sync.Mutex
	dialed := map[string]int{}
	var d net.Dialer
	linkDial := func(ctx context.Context, network, host string) (net.Conn, error) {
		mu.Lock()
		dialed[host]++
		mu.Unlock()
		if !slices.Contains(brokers, host) {
			return nil, fmt.Errorf("no link to %s", host)
		}
		return d.DialContext(ctx, network, host)
	}
	obs := &keys{seen: map[int16]int{}}
	gw := newGateway(wiretap.Dialer(linkDial, obs))
	defer gw.close()
	seed, err := gw.listen(brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	// The client may dial gateway listeners only.
	onlyGateway := func(ctx context.Context, network, host string) (net.Conn, error) {
		gw.mu.Lock()
		_, ok := gw.byLn[host]
		gw.mu.Unlock()
		if !ok {
			t.Errorf("the client dialed %s, which is not a gateway listener", host)
			return nil, fmt.Errorf("not a gateway address: %s", host)
		}
		return d.DialContext(ctx, network, host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	adm, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.Dialer(onlyGateway))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md, err := kadm.NewClient(adm).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Brokers) != 3 {
		t.Fatalf("metadata through the gateway names %d brokers, want 3", len(md.Brokers))
	}
	for _, b := range md.Brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if slices.Contains(brokers, addr) {
			t.Errorf("metadata through the gateway names broker %d at its own address %s", b.NodeID, addr)
		}
	}

	for i := range 30 {
		if err := adm.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i % 6), Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.Dialer(onlyGateway), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < 30 && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		got += fs.NumRecords()
	}
	if got < 30 {
		t.Fatalf("the group consumer read %d of 30 records through the gateway", got)
	}
	obs.mu.Lock()
	joins, syncs := obs.seen[kmsg.JoinGroup.Int16()], obs.seen[kmsg.SyncGroup.Int16()]
	obs.mu.Unlock()
	if joins == 0 || syncs == 0 {
		t.Errorf("the observer saw %d JoinGroup and %d SyncGroup requests, want both", joins, syncs)
	}
	mu.Lock()
	defer mu.Unlock()
	for h := range dialed {
		if !slices.Contains(brokers, h) {
			t.Errorf("the gateway dialed %s, which is no broker", h)
		}
	}
	if len(dialed) < 2 {
		t.Errorf("the gateway dialed %v: a client of a 3-broker cluster reaches more than the seed", dialed)
	}
}

// A Fetch answer that names a partition's new leader (KIP-951 leader
// hints: the Java client connects to it directly) names the gateway's
// listener for that broker instead; one without hints passes unchanged.
func TestGatewayRewritesFetchLeaderHints(t *testing.T) {
	gw := newGateway(func(context.Context, string, string) (net.Conn, error) {
		return nil, fmt.Errorf("no dial in this test")
	})
	defer gw.close()
	encode := func(r *kmsg.FetchResponse) []byte {
		frame := []byte{0, 0, 0, 42, 0} // correlation id 42, no header tags
		return r.AppendTo(frame)
	}
	const version = 16
	hinted := kmsg.NewPtrFetchResponse()
	hinted.Version = version
	b := kmsg.NewFetchResponseBroker()
	b.NodeID, b.Host, b.Port = 2, "127.0.0.1", 39092
	hinted.Brokers = append(hinted.Brokers, b)
	out, err := gw.rewrite(kmsg.Fetch.Int16(), version, encode(hinted))
	if err != nil {
		t.Fatal(err)
	}
	got := kmsg.NewPtrFetchResponse()
	got.Version = version
	if err := got.ReadFrom(out[5:]); err != nil {
		t.Fatal(err)
	}
	want, err := gw.listen("127.0.0.1:39092")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Brokers) != 1 || net.JoinHostPort(got.Brokers[0].Host, strconv.Itoa(int(got.Brokers[0].Port))) != want {
		t.Fatalf("rewritten leader hint %+v, want the gateway's %s", got.Brokers, want)
	}
	plain := kmsg.NewPtrFetchResponse()
	plain.Version = version
	in := encode(plain)
	out, err = gw.rewrite(kmsg.Fetch.Int16(), version, in)
	if err != nil || string(out) != string(in) {
		t.Fatalf("a Fetch answer without hints changed (%v)", err)
	}
}
