package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// flapFault is a flap of m1's link to node 2: cut 1.2s, up 0.7s.
func flapFault() Fault {
	return Fault{Kind: LinkFlap, Client: "m1", Node: 2, At: time.Second, For: 10 * time.Second, FlapDown: 1200 * time.Millisecond, FlapUp: 700 * time.Millisecond}
}

// fakeTimer is one wait of a flap, fired by the test.
type fakeTimer struct {
	d time.Duration
	c chan time.Time
}

// stepFlaps makes every flap wait on a timer the test receives and fires.
func stepFlaps(t *testing.T) <-chan fakeTimer {
	timers := make(chan fakeTimer, 100)
	old := flapTimer
	flapTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
		ft := fakeTimer{d, make(chan time.Time, 1)}
		timers <- ft
		return ft.c, func() bool { return true }
	}
	t.Cleanup(func() { flapTimer = old })
	return timers
}

// noFlapLeft fails t if a flap is still registered or its goroutine runs.
func noFlapLeft(t *testing.T) {
	t.Helper()
	flaps.Lock()
	n := len(flaps.m)
	flaps.Unlock()
	if n != 0 {
		t.Errorf("%d flaps still registered after their heal", n)
	}
	buf := make([]byte, 1<<20)
	if st := string(buf[:runtime.Stack(buf, true)]); strings.Contains(st, "faults.(*flap).run") {
		t.Errorf("a flap's goroutine outlived its heal:\n%s", st)
	}
}

// A flap cuts the link at once, brings it up after FlapDown, cuts it again
// after FlapUp, and so on; the heal stops it, heals the link for good and
// says how many cuts there were. No goroutine is left and nothing touches
// the link after the heal.
func TestFlapAppliesAndHeals(t *testing.T) {
	timers := stepFlaps(t)
	f := flapFault()
	r, links := &recorder{}, map[string]*recorder{}
	ctx := context.Background()
	saw, err := Apply(ctx, f, env(r, links))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(saw, "1.2s") || !strings.Contains(saw, "700ms") {
		t.Errorf("apply says %q, want its rhythm", saw)
	}
	l := links["m1"]
	var waits []time.Duration
	for range 2 { // up after the cut, cut again after the up
		ft := <-timers
		waits = append(waits, ft.d)
		ft.c <- time.Time{}
	}
	waits = append(waits, (<-timers).d) // waiting to bring the second cut up
	if want := []string{"cut 2", "linkheal 2", "cut 2"}; !slices.Equal(l.calls, want) {
		t.Errorf("calls while in force %q, want %q", l.calls, want)
	}
	if want := []time.Duration{f.FlapDown, f.FlapUp, f.FlapDown}; !slices.Equal(waits, want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	saw, err = Heal(ctx, f, env(r, links))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cut 2", "linkheal 2", "cut 2", "linkheal 2"}; !slices.Equal(l.calls, want) {
		t.Errorf("calls %q, want %q", l.calls, want)
	}
	if !strings.Contains(saw, "cut 2 times") {
		t.Errorf("heal says %q, want the count of cuts", saw)
	}
	if len(r.calls) != 0 {
		t.Errorf("a link fault touched nodes or members: %q", r.calls)
	}
	noFlapLeft(t)
	select {
	case ft := <-timers:
		t.Errorf("a flap waited %s after its heal", ft.d)
	default:
	}
	// A second heal (the final heal after a failed one) heals the link again.
	if saw, err := Heal(ctx, f, env(r, links)); err != nil || !strings.Contains(saw, "not flapping") {
		t.Errorf("second heal: %q, %v", saw, err)
	}
}

// syncLink is a Link safe for a flap's goroutine on the real clock; cutErr
// and healErr, when set, fail the nth call (1-based) of each.
type syncLink struct {
	mu              sync.Mutex
	calls           []string
	cutErr, healErr int
	ncut, nheal     int
}

// call counts one call in *n and records it as c, or fails it when it is
// the failAt-th.
func (s *syncLink) call(n *int, failAt int, c string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*n++
	if *n == failAt {
		return errors.New("toxiproxy said no")
	}
	s.calls = append(s.calls, c)
	return nil
}
func (s *syncLink) snapshot() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}
func (s *syncLink) Cut(n NodeID) error { return s.call(&s.ncut, s.cutErr, fmt.Sprintf("cut %d", n)) }
func (s *syncLink) Heal(n NodeID) error {
	return s.call(&s.nheal, s.healErr, fmt.Sprintf("heal %d", n))
}
func (s *syncLink) Latency(NodeID, time.Duration, time.Duration) error { return errors.New("unused") }
func (s *syncLink) Bandwidth(NodeID, int64) error                      { return errors.New("unused") }
func (s *syncLink) Blackhole(NodeID) error                             { return errors.New("unused") }
func (s *syncLink) ResetPeer(NodeID, time.Duration) error              { return errors.New("unused") }

func linksEnv(ls map[string]*syncLink) Env {
	return Env{Links: func(c string) (Link, error) {
		if ls[c] == nil {
			return nil, fmt.Errorf("no client %s", c)
		}
		return ls[c], nil
	}}
}

// On the real clock, two flaps of two clients run side by side, each
// alternating cut and heal; after their heals nothing more happens.
func TestFlapOnTheClock(t *testing.T) {
	ls := map[string]*syncLink{"m1": {}, "m2": {}}
	a := Fault{Kind: LinkFlap, Client: "m1", Node: AllNodes, FlapDown: MinFlapPeriod, FlapUp: MinFlapPeriod}
	b := Fault{Kind: LinkFlap, Client: "m2", Node: 1, FlapDown: MinFlapPeriod, FlapUp: 2 * MinFlapPeriod}
	ctx := context.Background()
	for _, f := range []Fault{a, b} {
		if _, err := Apply(ctx, f, linksEnv(ls)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(ls["m1"].snapshot()) < 5 || len(ls["m2"].snapshot()) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("flaps did not go on: m1 %q, m2 %q", ls["m1"].snapshot(), ls["m2"].snapshot())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, f := range []Fault{a, b} {
		if _, err := Heal(ctx, f, linksEnv(ls)); err != nil {
			t.Fatal(err)
		}
	}
	noFlapLeft(t)
	healed := map[string][]string{"m1": ls["m1"].snapshot(), "m2": ls["m2"].snapshot()}
	time.Sleep(5 * MinFlapPeriod)
	for c, want := range map[string]string{"m1": "-1", "m2": "1"} {
		calls := ls[c].snapshot()
		if !slices.Equal(calls, healed[c]) {
			t.Errorf("%s's link was touched after its heal: %q then %q", c, healed[c], calls)
		}
		// Cut, heal, cut, ... and the final heal (a second heal in a row
		// when it came while the link was up).
		for i, call := range calls[:len(calls)-1] {
			op := "cut"
			if i%2 == 1 {
				op = "heal"
			}
			if call != op+" "+want {
				t.Errorf("%s's call %d is %q, want %s %s (calls %q)", c, i, call, op, want, calls)
			}
		}
		if last := calls[len(calls)-1]; last != "heal "+want {
			t.Errorf("%s's link ends with %q, not healed", c, last)
		}
	}
}

// A flap whose cut fails at the start is not applied and leaves nothing
// running; its heal (the nemesis heals a fault whose apply failed) heals
// the link. A call that fails while flapping ends the flapping, and the
// heal says so.
func TestFlapFailures(t *testing.T) {
	ctx := context.Background()
	f := flapFault()
	ls := map[string]*syncLink{"m1": {cutErr: 1}}
	if _, err := Apply(ctx, f, linksEnv(ls)); err == nil {
		t.Fatal("a flap whose first cut failed was applied")
	}
	noFlapLeft(t)
	if saw, err := Heal(ctx, f, linksEnv(ls)); err != nil || !strings.Contains(saw, "not flapping") || !slices.Equal(ls["m1"].snapshot(), []string{"heal 2"}) {
		t.Errorf("heal after a failed apply: %q, %v, calls %q", saw, err, ls["m1"].snapshot())
	}

	timers := stepFlaps(t)
	ls["m1"] = &syncLink{healErr: 1}
	if _, err := Apply(ctx, f, linksEnv(ls)); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, f, linksEnv(ls)); err == nil || !strings.Contains(err.Error(), "already flapping") {
		t.Errorf("a fault applied twice: %v", err)
	}
	(<-timers).c <- time.Time{} // the up fails
	for tries := 0; ; tries++ {
		ls["m1"].mu.Lock()
		tried := ls["m1"].nheal > 0
		ls["m1"].mu.Unlock()
		if tried {
			break
		}
		if tries > 1000 {
			t.Fatal("the flap never tried to bring the link up")
		}
		time.Sleep(5 * time.Millisecond)
	}
	saw, err := Heal(ctx, f, linksEnv(ls))
	if err != nil || !strings.Contains(saw, "stopped early: toxiproxy said no") || !strings.Contains(saw, "cut once") {
		t.Errorf("heal after a failed up: %q, %v", saw, err)
	}
	if got := ls["m1"].snapshot(); !slices.Equal(got, []string{"cut 2", "heal 2"}) {
		t.Errorf("calls %q, want the cut and the final heal", got)
	}
	noFlapLeft(t)
	if _, err := Apply(ctx, f, Env{}); err == nil || !strings.Contains(err.Error(), string(LinkFlap)) {
		t.Errorf("a flap without links: %v", err)
	}
}

// Periods that are missing, negative or too short are refused with a
// message that names the fault and both periods, before any link is
// touched.
func TestFlapValidate(t *testing.T) {
	for name, mod := range map[string]func(*Fault){
		"negative cut":    func(f *Fault) { f.FlapDown = -time.Second },
		"negative up":     func(f *Fault) { f.FlapUp = -500 * time.Millisecond },
		"no periods":      func(f *Fault) { f.FlapDown, f.FlapUp = 0, 0 },
		"too short a cut": func(f *Fault) { f.FlapDown = MinFlapPeriod - 1 },
		"no client":       func(f *Fault) { f.Client = "" },
		"on a member":     func(f *Fault) { f.Member = "m1" },
	} {
		f := flapFault()
		mod(&f)
		ls := map[string]*syncLink{"m1": {}}
		_, err := Apply(context.Background(), f, linksEnv(ls))
		if err == nil {
			t.Errorf("%s: %+v accepted", name, f)
			continue
		}
		if !strings.Contains(err.Error(), string(LinkFlap)) {
			t.Errorf("%s: error %q does not name the kind", name, err)
		}
		if strings.Contains(name, "cut") || strings.Contains(name, "up") || strings.Contains(name, "periods") {
			want := fmt.Sprintf("flap_down %s and flap_up %s", f.FlapDown, f.FlapUp)
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "at least "+MinFlapPeriod.String()) {
				t.Errorf("%s: error %q does not say %q and the bound", name, err, want)
			}
		}
		if calls := ls["m1"].snapshot(); len(calls) != 0 {
			t.Errorf("%s: the link was touched: %q", name, calls)
		}
	}
	if err := flapFault().Validate(); err != nil {
		t.Errorf("a good flap refused: %v", err)
	}
}

// A flap is drawn with its rhythm in the fault (so in the plan): periods in
// [0.5s, 2s] in whole milliseconds, the same for the same seed and varying
// between seeds, lasting at least one cycle of the longest periods. The
// scenarios never draw it.
func TestFlapDraw(t *testing.T) {
	s := space()
	s.Kinds = []Kind{LinkFlap}
	periods := map[time.Duration]bool{}
	var n int
	for seed := range uint64(100) {
		sched, err := Generate(rng(seed), s, Normal.Count(s.Horizon))
		if err != nil {
			t.Fatal(err)
		}
		checkSchedule(t, s, sched)
		again, _ := Generate(rng(seed), s, Normal.Count(s.Horizon))
		if !slices.Equal(sched, again) {
			t.Errorf("seed %d: two schedules differ", seed)
		}
		for _, f := range sched {
			n++
			for _, p := range []time.Duration{f.FlapDown, f.FlapUp} {
				if p < flapLo || p > flapHi || p%time.Millisecond != 0 {
					t.Errorf("%v: period %s outside [%s, %s] or not whole milliseconds", f, p, flapLo, flapHi)
				}
				periods[p] = true
			}
			if f.For < 2*flapHi {
				t.Errorf("%v lasts less than one cycle of the longest periods", f)
			}
		}
	}
	if n == 0 || len(periods) < 50 {
		t.Errorf("%d flaps drew %d distinct periods over 100 seeds", n, len(periods))
	}
	for _, fam := range []Family{FamilyLink, FamilyNode, FamilyChurn} {
		if slices.Contains(InScenarios(fam), LinkFlap) {
			t.Errorf("the scenarios draw %s (family %s): existing seeds would change their plans", LinkFlap, fam)
		}
	}
	if k, err := ParseKinds("link-flap"); err != nil || !slices.Equal(k, []Kind{LinkFlap}) {
		t.Errorf("ParseKinds(link-flap) = %v, %v", k, err)
	}
}

// A flap goes through JSON (a plan file) unchanged, its rhythm by name;
// the history records the rhythm among its parameters.
func TestFlapRoundTrip(t *testing.T) {
	f := flapFault()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"link-flap"`, `"flap_down":1200000000`, `"flap_up":700000000`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	var g Fault
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g != f {
		t.Errorf("round trip: %+v, want %+v", g, f)
	}
	if err := g.Validate(); err != nil {
		t.Errorf("the fault read back does not validate: %v", err)
	}
	bad := strings.Replace(string(b), `"flap_down":1200000000`, `"flap_down":-1200000000`, 1)
	if err := json.Unmarshal([]byte(bad), &g); err != nil {
		t.Fatal(err)
	}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "flap_down -1.2s") {
		t.Errorf("a plan with a negative cut: %v", err)
	}
	want := map[string]string{"for": "10s", "flap_down": "1.2s", "flap_up": "700ms"}
	if got := f.Params(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Params = %v, want %v", got, want)
	}
}

// edgesTo reports a flap's edges on a channel the test reads.
func edgesTo(e Env) (Env, <-chan Edge) {
	c := make(chan Edge, 100)
	e.Edges = func(x Edge) { c <- x }
	return e, c
}

// A scripted flap tells Env.Edges of each change of the link in order,
// Apply's first cut included, each with the time it took effect (after the
// timer that led to it fired, before the edge was read) and the call to
// the link already made; the heal of a link left cut is its last restore.
// A flap healed while the link is up reports no restore at the heal.
func TestFlapReportsEdges(t *testing.T) {
	timers := stepFlaps(t)
	ctx := context.Background()
	f := flapFault()
	ls := map[string]*syncLink{"m1": {}}
	e, edges := edgesTo(linksEnv(ls))
	before := time.Now()
	if _, err := Apply(ctx, f, e); err != nil {
		t.Fatal(err)
	}
	applied := time.Now()
	if len(edges) != 1 {
		t.Fatalf("%d edges when Apply returned, want its cut", len(edges))
	}
	next := func(what string, fired time.Time) Edge {
		t.Helper()
		select {
		case x := <-edges:
			if x.At.Before(fired) || x.At.After(time.Now()) {
				t.Errorf("%s: took effect at %s, not between %s and its report", what, x.At.Format(time.StampNano), fired.Format(time.StampNano))
			}
			return x
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no edge", what)
		}
		return Edge{}
	}
	first := next("first cut", before)
	if first.Up || first.Cut != 1 || first.Final || first.Err != nil || first.Fault != f || first.At.After(applied) {
		t.Errorf("first edge %+v, want cut 1 of %s taken before Apply returned", first, f)
	}
	var got []string
	last := first.At
	for i := range 3 { // up after cut 1, cut 2, up after cut 2
		ft := <-timers
		fired := time.Now()
		ft.c <- fired
		x := next(fmt.Sprintf("edge %d", i+2), fired)
		if x.At.Before(last) {
			t.Errorf("edge %v at %s before the edge before it (%s)", x, x.At, last)
		}
		last = x.At
		if n := len(ls["m1"].snapshot()); n != i+2 {
			t.Errorf("edge %v reported with %d calls to the link made, want %d", x, n, i+2)
		}
		got = append(got, x.String())
	}
	ft := <-timers // the cut after the second up
	fired := time.Now()
	ft.c <- fired
	got = append(got, next("cut 3", fired).String())
	<-timers // waiting to bring cut 3 up: the heal comes first
	healing := time.Now()
	if saw, err := Heal(ctx, f, e); err != nil || !strings.Contains(saw, "cut 3 times") {
		t.Fatalf("heal: %q, %v", saw, err)
	}
	fin := next("the heal's restore", healing)
	if !fin.Up || !fin.Final || fin.Cut != 3 {
		t.Errorf("the heal's edge %+v, want the final restore after cut 3", fin)
	}
	got = append(got, fin.String())
	if want := []string{"up after cut 1", "cut 2", "up after cut 2", "cut 3", "up after cut 3 (the heal)"}; !slices.Equal(got, want) {
		t.Errorf("edges %q, want %q", got, want)
	}
	if want := []string{"cut 2", "heal 2", "cut 2", "heal 2", "cut 2", "heal 2"}; !slices.Equal(ls["m1"].snapshot(), want) {
		t.Errorf("calls %q, want %q", ls["m1"].snapshot(), want)
	}
	noFlapLeft(t)
	if len(edges) != 0 {
		t.Errorf("%d edges after the heal's", len(edges))
	}

	// Healed in an up window: the heal changes nothing, and says nothing.
	ls["m1"] = &syncLink{}
	if _, err := Apply(ctx, f, e); err != nil {
		t.Fatal(err)
	}
	next("first cut", before)
	(<-timers).c <- time.Now()
	if x := next("up", before); !x.Up || x.Final || x.Cut != 1 {
		t.Errorf("edge %+v, want up after cut 1", x)
	}
	<-timers
	if _, err := Heal(ctx, f, e); err != nil {
		t.Fatal(err)
	}
	noFlapLeft(t)
	if len(edges) != 0 {
		t.Errorf("a heal in an up window reported %v", <-edges)
	}

	// A restore that fails is reported with its error, and so is the heal
	// after it (the link may have stayed cut).
	ls["m1"] = &syncLink{healErr: 1}
	if _, err := Apply(ctx, f, e); err != nil {
		t.Fatal(err)
	}
	next("first cut", before)
	(<-timers).c <- time.Now()
	if x := next("failed up", before); !x.Up || x.Err == nil || !strings.Contains(x.String(), "failed: toxiproxy said no") {
		t.Errorf("edge %+v (%s), want the failed restore", x, x)
	}
	if _, err := Heal(ctx, f, e); err != nil {
		t.Fatal(err)
	}
	if x := next("heal after a failure", before); !x.Up || !x.Final || x.Err != nil || x.Cut != 1 {
		t.Errorf("edge %+v, want the heal's restore after cut 1", x)
	}
	noFlapLeft(t)

	// A cut that fails is reported with its number and error; the heal's
	// restore ends that cut (it may have taken effect).
	ls["m1"] = &syncLink{cutErr: 2}
	if _, err := Apply(ctx, f, e); err != nil {
		t.Fatal(err)
	}
	next("first cut", before)
	(<-timers).c <- time.Now()
	next("up", before)
	(<-timers).c <- time.Now()
	if x := next("failed cut", before); x.Up || x.Cut != 2 || x.Err == nil {
		t.Errorf("edge %+v, want the failed cut 2", x)
	}
	if saw, err := Heal(ctx, f, e); err != nil || !strings.Contains(saw, "cut once") {
		t.Fatalf("heal: %q, %v", saw, err)
	}
	if x := next("heal after a failed cut", before); !x.Up || !x.Final || x.Cut != 2 {
		t.Errorf("edge %+v, want the heal's restore after cut 2", x)
	}
	noFlapLeft(t)
}
