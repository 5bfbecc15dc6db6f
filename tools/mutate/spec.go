package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Spec is one mutant list (tools/mutate/mutants/*.json): the packages whose rules are mutated
// automatically, hand-written mutants, and the mutants known to be equivalent, each with its reason,
// so that a surviving equivalent is documented rather than silently dropped.
type Spec struct {
	// Comment is free text for people.
	Comment string `json:"comment,omitempty"`
	// Test is the command that must fail for a mutant to count as killed (run with sh -c at the
	// module root); the -test flag overrides it.
	Test string `json:"test,omitempty"`
	// MinScore is the lowest score (killed / (killed + survived)) the list accepts when -min-score
	// is not given: set to the score last measured, so that a change that lets a mutant survive
	// fails the run (the nightly workflow's `make mutate`) instead of lowering the score quietly.
	MinScore float64 `json:"min_score,omitempty"`
	// Auto lists package directories (module-relative) whose non-test Go files get generated
	// mutants (see gen.go for the operators), or single files (ending in .go) where mutating a
	// whole package would make the run too long.
	Auto []string `json:"auto,omitempty"`
	// DeleteCalls names the functions and methods whose call statements are deleted one at a time
	// by the auto generator (for harness/check: "fail", the call that records a violation).
	DeleteCalls []string `json:"delete_calls,omitempty"`
	// Mutants are hand-written: an exact snippet of a file and its replacement.
	Mutants []HandMutant `json:"mutants,omitempty"`
	// Equivalent lists generated mutants (by ID, as the report prints it) that cannot change
	// behaviour, with the reason. They are not run and do not count in the score.
	Equivalent []EquivalentMutant `json:"equivalent,omitempty"`
}

// HandMutant is one deliberate bug written by hand.
type HandMutant struct {
	Name string `json:"name"`
	// File is module-relative, with forward slashes.
	File string `json:"file"`
	// Original must occur exactly once in File.
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
	Why         string `json:"why,omitempty"`
	// Equivalent, when set, says why this mutant cannot change behaviour.
	Equivalent string `json:"equivalent,omitempty"`
}

// EquivalentMutant marks a generated mutant as equivalent.
type EquivalentMutant struct {
	ID  string `json:"id"`
	Why string `json:"why"`
}

func loadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the mutant list: %v", err)
	}
	var s Spec
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("mutant list %s is not valid JSON for a Spec (%v): see tools/mutate/spec.go for the fields", path, err)
	}
	if s.MinScore < 0 || s.MinScore > 1 {
		return nil, fmt.Errorf("mutant list %s: min_score %v is not a fraction: give a value from 0 to 1", path, s.MinScore)
	}
	return &s, nil
}

// handMutants resolves the hand-written mutants against the files under root.
func handMutants(root string, hs []HandMutant) ([]Mutant, error) {
	var out []Mutant
	for i, h := range hs {
		if h.Name == "" || h.File == "" || h.Original == "" {
			return nil, fmt.Errorf("hand mutant %d (%q): name, file and original are required", i, h.Name)
		}
		if h.Original == h.Replacement {
			return nil, fmt.Errorf("hand mutant %q: the replacement equals the original, so it cannot change anything", h.Name)
		}
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(h.File)))
		if err != nil {
			return nil, fmt.Errorf("hand mutant %q: %v", h.Name, err)
		}
		n := strings.Count(string(src), h.Original)
		if n != 1 {
			return nil, fmt.Errorf("hand mutant %q: the original snippet occurs %d times in %s, it must occur exactly once: quote more context (or fix the list after a code change)", h.Name, n, h.File)
		}
		at := strings.Index(string(src), h.Original)
		out = append(out, Mutant{
			ID:          "hand:" + h.Name,
			File:        h.File,
			Line:        1 + strings.Count(string(src[:at]), "\n"),
			Op:          "hand",
			Original:    h.Original,
			Replacement: h.Replacement,
			Why:         h.Why,
			Equivalent:  h.Equivalent,
			start:       at,
			end:         at + len(h.Original),
		})
	}
	return out, nil
}
