package check

import (
	"sort"
	"time"

	"github.com/groupquake/groupquake/harness/history"
)

// Cost is what rebalances cost a run: how long consumption stopped, per protocol, per partition and
// per member. It is a measurement for the report and the trend across runs, not a verdict.
type Cost struct {
	Protocols map[string]*ProtocolCost `json:"protocols"`
}

// ProtocolCost is the cost under one protocol (that of the ownership that resumed consumption).
type ProtocolCost struct {
	// PartitionStops summarises every time a partition had no owner between two ownerships.
	PartitionStops Stats `json:"partition_stops"`
	// MemberStops summarises every time a member that owned partitions owned none until it got some
	// again (the stop-the-world of an eager rebalance; cooperative and KIP-848 rebalances should
	// show few). A clean leave followed by a rejoin is not counted.
	MemberStops Stats            `json:"member_stops"`
	Partitions  map[string]Stats `json:"partitions"`
	Members     map[string]Stats `json:"members"`
	// Stops lists each stop, in history order.
	Stops []Stop `json:"stops"`
}

// Stop is one stretch without consumption.
type Stop struct {
	Partition string        `json:"partition,omitempty"`
	Member    string        `json:"member,omitempty"`
	From      time.Duration `json:"from"`
	To        time.Duration `json:"to"`
	Duration  time.Duration `json:"duration"`
	// Epoch is the generation or member epoch at which consumption resumed.
	Epoch int32 `json:"epoch"`
	// EventIndexes are the event that ended the previous ownership and the one that began the next.
	EventIndexes []int64 `json:"event_indexes"`
}

// Stats summarises durations (nearest-rank percentiles).
type Stats struct {
	Count int           `json:"count"`
	Total time.Duration `json:"total"`
	Mean  time.Duration `json:"mean"`
	P50   time.Duration `json:"p50"`
	P99   time.Duration `json:"p99"`
	Max   time.Duration `json:"max"`
}

// StatsOf summarises durations: count, total, mean, and the nearest-rank
// p50, p99 and max (results summarises its own stops with it).
func StatsOf(ds []time.Duration) Stats { return statsOf(ds) }

func statsOf(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(a, b int) bool { return s[a] < s[b] })
	st := Stats{Count: len(s), Max: s[len(s)-1]}
	for _, d := range s {
		st.Total += d
	}
	st.Mean = st.Total / time.Duration(len(s))
	rank := func(p int) time.Duration { return s[(len(s)*p+99)/100-1] }
	st.P50, st.P99 = rank(50), rank(99)
	return st
}

// RebalanceCost measures, from the ownership the members reported, how long each partition went
// without an owner between two ownerships and how long each member went without any partition.
func RebalanceCost(events []history.Event) *Cost {
	return rebalanceCost(build(events, nil))
}

func rebalanceCost(f *facts) *Cost {
	cost := &Cost{Protocols: map[string]*ProtocolCost{}}
	type acc struct {
		parts, mems   []time.Duration
		byPart, byMem map[string][]time.Duration
		stops         []Stop
	}
	accs := map[string]*acc{}
	get := func(p string) *acc {
		if p == "" {
			p = "unknown"
		}
		a := accs[p]
		if a == nil {
			a = &acc{byPart: map[string][]time.Duration{}, byMem: map[string][]time.Duration{}}
			accs[p] = a
		}
		return a
	}
	n := len(f.ev)
	for tp, ids := range f.byTP {
		covered := -1 // position until which some ownership has covered the partition
		for _, id := range ids {
			iv := &f.intervals[id]
			if covered >= 0 && covered < n && iv.start > covered {
				d := f.ev[iv.start].Time - f.ev[covered].Time
				a := get(iv.protocol)
				name := f.tps[tp].String()
				a.parts = append(a.parts, d)
				a.byPart[name] = append(a.byPart[name], d)
				a.stops = append(a.stops, Stop{Partition: name, From: f.ev[covered].Time, To: f.ev[iv.start].Time, Duration: d, Epoch: iv.epoch,
					EventIndexes: []int64{f.idx(covered), f.idx(iv.start)}})
			}
			covered = max(covered, iv.end)
		}
	}
	// Members: walk each member's ownership starts and ends in order.
	type edge struct{ pos, d, iv int }
	edges := make([][]edge, len(f.mems))
	for id, iv := range f.intervals {
		edges[iv.member] = append(edges[iv.member], edge{iv.start, +1, id})
		if iv.end < n {
			edges[iv.member] = append(edges[iv.member], edge{iv.end, -1, id})
		}
	}
	for m, es := range edges {
		sort.SliceStable(es, func(a, b int) bool {
			if es[a].pos != es[b].pos {
				return es[a].pos < es[b].pos
			}
			return es[a].d < es[b].d
		})
		owned, emptySince := 0, -1
		for _, e := range es {
			if e.d > 0 && owned == 0 && emptySince >= 0 {
				iv := &f.intervals[e.iv]
				d := f.ev[e.pos].Time - f.ev[emptySince].Time
				a := get(iv.protocol)
				a.mems = append(a.mems, d)
				a.byMem[f.mems[m]] = append(a.byMem[f.mems[m]], d)
				a.stops = append(a.stops, Stop{Member: f.mems[m], From: f.ev[emptySince].Time, To: f.ev[e.pos].Time, Duration: d, Epoch: iv.epoch,
					EventIndexes: []int64{f.idx(emptySince), f.idx(e.pos)}})
			}
			owned += e.d
			emptySince = -1
			if owned == 0 && e.d < 0 && f.ev[e.pos].F != history.FLeft {
				emptySince = e.pos
			}
		}
	}
	for p, a := range accs {
		pc := &ProtocolCost{PartitionStops: statsOf(a.parts), MemberStops: statsOf(a.mems), Partitions: map[string]Stats{}, Members: map[string]Stats{}, Stops: a.stops}
		for k, ds := range a.byPart {
			pc.Partitions[k] = statsOf(ds)
		}
		for k, ds := range a.byMem {
			pc.Members[k] = statsOf(ds)
		}
		sort.SliceStable(pc.Stops, func(x, y int) bool { return pc.Stops[x].EventIndexes[1] < pc.Stops[y].EventIndexes[1] })
		cost.Protocols[p] = pc
	}
	return cost
}
