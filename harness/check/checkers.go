package check

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"

	"github.com/groupquake/groupquake/harness/history"
)

// Groups says which groups a checker judges.
type Groups uint8

const (
	// ConsumerGroups are classic and consumer-protocol (KIP-848) groups.
	ConsumerGroups Groups = 1 << iota
	// ShareGroups are KIP-932 share groups.
	ShareGroups
	// AnyGroup is every group: the checkers of the history itself.
	AnyGroup = ConsumerGroups | ShareGroups
)

// A Checker is one property groupquake asserts over a run: its name, its
// place among the verdicts, the groups it judges, what it asserts in a
// sentence (the README's glossary is generated from it: `make docs`), and
// the judgement itself.
//
// A new checker is one file and its test: the file declares its name and
// registers itself from a package-level variable, which a consumer-group
// checker makes the function that judges a history with it alone (Judge),
//
//	const NameX = "X"
//
//	// X checks that ...
//	var X = register(Checker{Name: NameX, Place: 140, Groups: ConsumerGroups,
//		Asserts: "what X asserts, in a sentence",
//		judge:   func(in *judging) Verdict { return x(in.f) }}).Judge
//
// and the run, `groupquake check`, the suites, the bite suite, the report
// and the glossary all read Checkers. Other packages name a checker through
// its Name constant, never through a string of their own.
type Checker struct {
	Name    string
	Place   int
	Groups  Groups
	Asserts string
	judge   func(in *judging) Verdict
	// nothing says why a history holds nothing for the checker to judge ("" when it holds
	// something): then its verdict is skipped, not a hold (nothing.go). Nil: it always has.
	nothing func(in *judging) string
}

// judging is what every judgement may read: the decoded history, its share
// records, the final observations, the plan and All's options.
type judging struct {
	f    *facts
	sf   *shareFacts
	obs  *history.Observations
	plan history.Plan
	o    options
}

// Checkers are every checker, in the order of their verdicts (by Place):
// the consumer-group checkers, then the share-group ones. Each checker's
// file adds it (register); read it, never append to it.
var Checkers []Checker

// register adds c to Checkers at its place; each checker's file calls it
// once. Two checkers with one name or one place are a programming error.
func register(c Checker) Checker {
	if c.Name == "" || c.Asserts == "" || c.judge == nil || c.Groups == 0 {
		panic("check: checker registered without a name, a sentence, groups or a judgement: " + c.Name)
	}
	at := len(Checkers)
	for i, x := range Checkers {
		if x.Name == c.Name || x.Place == c.Place {
			panic(fmt.Sprintf("check: checker %s registered at place %d, taken by %s at %d", c.Name, c.Place, x.Name, x.Place))
		}
		if x.Place > c.Place && at == len(Checkers) {
			at = i
		}
	}
	Checkers = slices.Insert(Checkers, at, c)
	return c
}

// For returns the checkers that judge groups of kind g (a consumer-group
// run's checkers are For(ConsumerGroups)), in the order of their verdicts.
func For(g Groups) []Checker {
	var out []Checker
	for _, c := range Checkers {
		if c.Groups&g != 0 {
			out = append(out, c)
		}
	}
	return out
}

// File is the file of harness/check the checker registers itself in,
// where its judgement lives (the design's table of checkers names it).
func (c Checker) File() string {
	fn := runtime.FuncForPC(reflect.ValueOf(c.judge).Pointer())
	if fn == nil {
		return ""
	}
	file, _ := fn.FileLine(fn.Entry())
	return filepath.Base(file)
}

// Judge is c's verdict on one history and its observations, judged alone:
// with no plan and no options of All.
func (c Checker) Judge(events []history.Event, obs *history.Observations) Verdict {
	return judgeOne(c, &judging{f: build(events, obs), obs: obs})
}

// Named is the checker of that name among Checkers.
func Named(name string) (Checker, bool) {
	for _, c := range Checkers {
		if c.Name == name {
			return c, true
		}
	}
	return Checker{}, false
}
