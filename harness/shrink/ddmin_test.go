package shrink

import (
	"errors"
	"slices"
	"testing"
)

// needs is a scripted oracle: a subset fails when it holds every fault of
// need; it counts its calls.
func needs(need ...int) (Oracle, *int) {
	calls := 0
	return func(kept []int) (bool, error) {
		calls++
		for _, i := range need {
			if !slices.Contains(kept, i) {
				return false, nil
			}
		}
		return true, nil
	}, &calls
}

// oneMinimal checks that kept fails under needs(need...) and that
// removing any one of its elements holds: kept is 1-minimal.
func oneMinimal(t *testing.T, kept []int, need ...int) {
	t.Helper()
	o, _ := needs(need...)
	if fails, _ := o(kept); !fails {
		t.Errorf("need %v: kept %v holds", need, kept)
	}
	for i := range kept {
		less := slices.Delete(slices.Clone(kept), i, i+1)
		if fails, _ := o(less); fails {
			t.Errorf("need %v: kept %v is not 1-minimal: without %d it still fails", need, kept, kept[i])
		}
	}
}

func TestDDMinFindsTheOneNeededFault(t *testing.T) {
	for _, need := range []int{0, 5, 11} {
		o, calls := needs(need)
		res, err := DDMin(12, 100, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Kept, []int{need}) || res.Bounded {
			t.Errorf("need %d: kept %v (bounded %v), want [%d]", need, res.Kept, res.Bounded, need)
		}
		if len(res.Trials) != *calls {
			t.Errorf("need %d: %d trials recorded, the oracle was called %d times", need, len(res.Trials), *calls)
		}
		if len(res.Trials) == 0 {
			t.Fatalf("need %d: no trial recorded", need)
		}
		if len(res.Trials[0].Kept) != 0 || res.Trials[0].Fails {
			t.Errorf("need %d: the first trial is %+v, want the empty set, holding", need, res.Trials[0])
		}
		oneMinimal(t, res.Kept, need)
		// Binary search over 12: the empty set, then a handful of halves.
		if len(res.Trials) > 10 {
			t.Errorf("need %d: %d trials to find one fault of 12: %+v", need, len(res.Trials), res.Trials)
		}
	}
}

func TestDDMinFindsTwoNeededTogether(t *testing.T) {
	for _, need := range [][]int{{1, 6}, {2, 3}, {0, 7}} {
		o, _ := needs(need...)
		res, err := DDMin(8, 100, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Kept, need) || res.Bounded {
			t.Errorf("need %v: kept %v (bounded %v), trials %+v", need, res.Kept, res.Bounded, res.Trials)
		}
		// The recorded results are the oracle's, and the set is 1-minimal.
		for _, tr := range res.Trials {
			if tr.Fails != (slices.Contains(tr.Kept, need[0]) && slices.Contains(tr.Kept, need[1])) {
				t.Errorf("trial %v recorded fails=%v against the oracle", tr.Kept, tr.Fails)
			}
		}
		oneMinimal(t, res.Kept, need...)
	}
}

func TestDDMinNoFaultNeeded(t *testing.T) {
	o, calls := needs()
	res, err := DDMin(6, 16, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kept) != 0 || res.Kept == nil || *calls != 1 || res.Bounded {
		t.Errorf("kept %v after %d calls (bounded %v), want [] after the one trial with no fault", res.Kept, *calls, res.Bounded)
	}
}

func TestDDMinRespectsMaxTrials(t *testing.T) {
	for _, max := range []int{1, 2, 3, 5} {
		o, calls := needs(3, 9)
		res, err := DDMin(16, max, o)
		if err != nil {
			t.Fatal(err)
		}
		if *calls > max || len(res.Trials) != *calls {
			t.Errorf("max %d: %d calls, %d trials recorded", max, *calls, len(res.Trials))
		}
		if !res.Bounded {
			t.Errorf("max %d: not bounded, kept %v", max, res.Kept)
		}
		// Whatever it stopped on still fails.
		if !slices.Contains(res.Kept, 3) || !slices.Contains(res.Kept, 9) {
			t.Errorf("max %d: kept %v, which does not fail", max, res.Kept)
		}
	}
	// Enough trials: not bounded.
	o, _ := needs(3, 9)
	if res, _ := DDMin(16, 64, o); res.Bounded || !slices.Equal(res.Kept, []int{3, 9}) {
		t.Errorf("max 64: kept %v, bounded %v", res.Kept, res.Bounded)
	}
	if _, err := DDMin(4, 0, func([]int) (bool, error) { return true, nil }); !errors.Is(err, ErrBound) {
		t.Errorf("max 0: %v, want ErrBound", err)
	}
}

// A subset is never tried twice, and the whole set (known to fail) never.
func TestDDMinTriesEachSubsetOnce(t *testing.T) {
	o, _ := needs(2, 5, 6)
	res, _ := DDMin(9, 200, o)
	seen := map[string]bool{}
	for _, tr := range res.Trials {
		k := key(tr.Kept)
		if seen[k] {
			t.Errorf("%v tried twice", tr.Kept)
		}
		seen[k] = true
		if len(tr.Kept) == 9 {
			t.Error("the whole set was tried again")
		}
	}
	if !slices.Equal(res.Kept, []int{2, 5, 6}) {
		t.Errorf("kept %v, want [2 5 6]", res.Kept)
	}
	oneMinimal(t, res.Kept, 2, 5, 6)
}

func TestDDMinStopsOnAnError(t *testing.T) {
	boom := errors.New("interrupted")
	n := 0
	res, err := DDMin(8, 16, func(kept []int) (bool, error) {
		n++
		if n == 3 {
			return false, boom
		}
		return slices.Contains(kept, 1), nil
	})
	if !errors.Is(err, boom) || n != 3 || len(res.Trials) != 2 {
		t.Errorf("err %v after %d calls, %d trials recorded; want the oracle's error after 3, 2 recorded", err, n, len(res.Trials))
	}
	if !slices.Contains(res.Kept, 1) {
		t.Errorf("kept %v, which does not fail", res.Kept)
	}
}

func TestName(t *testing.T) {
	for _, c := range []struct {
		kept []int
		want string
	}{{nil, "none"}, {[]int{0}, "f1"}, {[]int{0, 3}, "f1+4"}, {[]int{0, 1, 2, 3, 4}, "5-faults"}} {
		if got := Name(c.kept); got != c.want {
			t.Errorf("Name(%v) = %q, want %q", c.kept, got, c.want)
		}
	}
}
