// Package shrink finds a smaller set of a failing run's faults under which
// it still fails: delta debugging (Zeller and Hildebrandt's ddmin) over the
// indexes of the plan's faults, with an oracle that carries out a trial and
// says whether it failed. It is pure logic: groupquake shrink supplies the
// oracle (runs of the plan with a subset of its faults).
package shrink

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Oracle carries out one trial with the faults whose indexes are kept (in
// ascending order) and says whether it still fails. An error stops the
// search (an interrupt, a trial that could not be carried out).
type Oracle func(kept []int) (fails bool, err error)

// Trial is one subset tried and what the oracle said of it.
type Trial struct {
	Kept  []int `json:"kept"`
	Fails bool  `json:"fails"`
}

// Result is what the search found.
type Result struct {
	// Kept is the smallest failing subset found (ascending indexes): the
	// whole set when no smaller one failed, empty when the run fails with
	// no fault at all.
	Kept []int
	// Trials are the oracle's calls, in order.
	Trials []Trial
	// Bounded says the bound on trials stopped the search before Kept was
	// 1-minimal (removing any one of its faults was not tried).
	Bounded bool
}

// ErrBound is returned by a search that was given no trial to make.
var ErrBound = errors.New("shrink: max trials must be at least 1")

// DDMin shrinks the set {0, ..., n-1}, which is known to fail (it is not
// tried again), with at most maxTrials calls of test. It tries the empty
// set first: a failure that needs no fault is said at once. Then ddmin:
// split the current failing set into parts, keep a part that fails alone,
// else a complement of a part that fails, else split finer, until every
// part is one fault. Subsets already tried are not tried again. The
// result is 1-minimal unless Bounded: dropping any one fault of Kept was
// seen to hold. On an error from test the result so far is returned with
// it.
func DDMin(n, maxTrials int, test Oracle) (Result, error) {
	if maxTrials < 1 {
		return Result{}, ErrBound
	}
	s := &search{test: test, max: maxTrials, seen: map[string]bool{}}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	s.seen[key(all)] = true
	res := Result{Kept: all}
	if n == 0 {
		return res, nil
	}
	fails, ok, err := s.try(nil)
	if err != nil || !ok {
		res.Trials, res.Bounded = s.trials, !ok
		return res, err
	}
	if fails {
		res.Kept, res.Trials = []int{}, s.trials
		return res, nil
	}
	c, bounded, err := s.reduce(all)
	res.Kept, res.Trials, res.Bounded = c, s.trials, bounded
	return res, err
}

// search is one DDMin's state.
type search struct {
	test   Oracle
	max    int
	seen   map[string]bool // subsets tried, and the whole set
	trials []Trial
}

// try calls the oracle on kept unless the bound is reached (ok false).
// A subset tried before is not tried again: it held (a failing one would
// have been kept), so fails is false.
func (s *search) try(kept []int) (fails, ok bool, err error) {
	k := key(kept)
	if s.seen[k] {
		return false, true, nil
	}
	if len(s.trials) >= s.max {
		return false, false, nil
	}
	s.seen[k] = true
	fails, err = s.test(slices.Clone(kept))
	if err != nil {
		return false, true, err
	}
	s.trials = append(s.trials, Trial{Kept: slices.Clone(kept), Fails: fails})
	return fails, true, nil
}

// reduce is ddmin's loop from the failing set c, granularity 2.
func (s *search) reduce(c []int) (kept []int, bounded bool, err error) {
	n := 2
	for len(c) >= 2 {
		parts := split(c, n)
		next, ok, err := s.firstFailing(parts, complements(c, parts, n))
		if err != nil || !ok {
			return c, !ok, err
		}
		if next != nil { // a part or a complement: a strict subset
			c, n = next.kept, max(next.n, 2)
			continue
		}
		if n >= len(c) {
			break
		}
		n = min(2*n, len(c))
	}
	return c, false, nil
}

// candidate is a smaller set to go on from, and the granularity to go on
// with.
type candidate struct {
	kept []int
	n    int
}

// firstFailing tries each part, then each complement, and returns the
// first that fails (nil when none does); ok is false when the bound
// stopped it.
func (s *search) firstFailing(parts, comps [][]int) (*candidate, bool, error) {
	for _, p := range parts {
		fails, ok, err := s.try(p)
		if err != nil || !ok {
			return nil, ok, err
		}
		if fails {
			return &candidate{p, 2}, true, nil
		}
	}
	for _, p := range comps {
		fails, ok, err := s.try(p)
		if err != nil || !ok {
			return nil, ok, err
		}
		if fails {
			return &candidate{p, len(parts) - 1}, true, nil
		}
	}
	return nil, true, nil
}

// split cuts c into n parts of sizes as equal as can be, in order.
func split(c []int, n int) [][]int {
	var parts [][]int
	start := 0
	for i := range n {
		end := start + (len(c)-start)/(n-i)
		parts = append(parts, c[start:end])
		start = end
	}
	return parts
}

// complements are c without each part; none for two parts, whose
// complements are the parts themselves.
func complements(c []int, parts [][]int, n int) [][]int {
	if n <= 2 {
		return nil
	}
	var out [][]int
	for _, p := range parts {
		var comp []int
		for _, i := range c {
			if !slices.Contains(p, i) {
				comp = append(comp, i)
			}
		}
		out = append(out, comp)
	}
	return out
}

// key names a subset.
func key(kept []int) string {
	var b strings.Builder
	for _, i := range kept {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(',')
	}
	return b.String()
}

// Name is a subset's short name for a directory: "none", or the kept
// indexes counted from 1 joined by "+" ("1+4"), cut to "N-faults" past a
// few.
func Name(kept []int) string {
	if len(kept) == 0 {
		return "none"
	}
	if len(kept) > 4 {
		return fmt.Sprintf("%d-faults", len(kept))
	}
	var s []string
	for _, i := range kept {
		s = append(s, strconv.Itoa(i+1))
	}
	return "f" + strings.Join(s, "+")
}
