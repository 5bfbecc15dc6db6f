package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Status is what running the tests against one mutant showed.
type Status string

const (
	Killed     Status = "killed"     // the test command failed
	Timeout    Status = "timeout"    // the test command ran past the limit (counted as killed)
	Survived   Status = "survived"   // the test command passed: no test holds this rule
	Stillborn  Status = "stillborn"  // the mutated package does not compile or vet: not counted
	Equivalent Status = "equivalent" // listed as unable to change behaviour: not run, not counted
)

// Result is one mutant's outcome.
type Result struct {
	ID          string        `json:"id"`
	File        string        `json:"file"`
	Line        int           `json:"line"`
	Op          string        `json:"op"`
	Original    string        `json:"original"`
	Replacement string        `json:"replacement"`
	Status      Status        `json:"status"`
	Why         string        `json:"why,omitempty"`
	Duration    time.Duration `json:"duration_ns"`
	// Output is the tail of what the go command said about a stillborn mutant.
	Output string `json:"output,omitempty"`
}

// Summary is the machine-readable outcome of a run (-json).
type Summary struct {
	Command    string   `json:"command"`
	Killed     int      `json:"killed"` // timeouts included
	Survived   int      `json:"survived"`
	Total      int      `json:"total"` // killed + survived
	Stillborn  int      `json:"stillborn"`
	Equivalent int      `json:"equivalent"`
	Score      float64  `json:"score"` // killed / total
	MinScore   float64  `json:"min_score"`
	Pass       bool     `json:"pass"`
	Results    []Result `json:"results"`
}

// runner runs a test command against mutants. Nothing in the module tree is written: each mutant is
// one file written to a temporary directory and handed to the go command with -overlay (through
// GOFLAGS, so any command that runs `go test` sees it), and the directory is removed at the end,
// also when the run is interrupted.
type runner struct {
	root    string // module root
	test    string // sh -c command
	timeout time.Duration
	tmp     string
	log     io.Writer
}

// buildFailed reports whether go test output says the package did not build (a compile error or
// one of the vet checks go test runs): such a mutant says nothing about the tests, it is stillborn.
func buildFailed(out []byte) bool {
	return bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]"))
}

// overlay writes the mutated file and the overlay JSON for m, returning the JSON's path.
func (r *runner) overlay(m *Mutant, n int) (string, error) {
	abs := filepath.Join(r.root, filepath.FromSlash(m.File))
	src, err := os.ReadFile(abs)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(r.tmp, fmt.Sprint(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mutated := filepath.Join(dir, filepath.Base(abs))
	if err := os.WriteFile(mutated, m.apply(src), 0o644); err != nil {
		return "", err
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": {abs: mutated}})
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "overlay.json")
	return ov, os.WriteFile(ov, data, 0o644)
}

// sh runs command at the module root with the overlay in GOFLAGS, in its own process group so a
// timeout or an interrupt kills everything it started.
func (r *runner) sh(ctx context.Context, command, overlay string, limit time.Duration) (out []byte, timedOut bool, err error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", command)
	cmd.Dir = r.root
	env := os.Environ()
	if overlay != "" {
		env = append(env, "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -overlay="+overlay))
	}
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return buf.Bytes(), true, err
	}
	return buf.Bytes(), false, err
}

// baseline runs the test command on the unmutated tree; it must pass, and its duration sets the
// default timeout.
func (r *runner) baseline(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	out, _, err := r.sh(ctx, r.test, "", 0)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("the test command fails without any mutant (%v), so no mutant can be judged: fix the tests first.\n$ %s\n%s", err, r.test, tail(out, 40))
	}
	return time.Since(start), nil
}

// one runs the test command against m.
func (r *runner) one(ctx context.Context, m *Mutant, n int) (Result, error) {
	res := Result{ID: m.ID, File: m.File, Line: m.Line, Op: m.Op, Original: m.Original, Replacement: m.Replacement, Why: m.Why}
	if m.Equivalent != "" {
		res.Status, res.Why = Equivalent, m.Equivalent
		return res, nil
	}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	ov, err := r.overlay(m, n)
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(filepath.Dir(ov))
	out, timedOut, err := r.sh(ctx, r.test, ov, r.timeout)
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	switch {
	case timedOut:
		res.Status = Timeout
	case err != nil:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return res, fmt.Errorf("running the test command: %v", err)
		}
		res.Status = Killed
		if buildFailed(out) {
			res.Status, res.Output = Stillborn, string(tail(out, 8))
		}
	default:
		res.Status = Survived
	}
	return res, nil
}

// runAll runs every mutant with j workers, reporting progress to r.log; results keep the mutants'
// order.
func (r *runner) runAll(ctx context.Context, ms []Mutant, j int) ([]Result, error) {
	results := make([]Result, len(ms))
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for w := 0; w < max(j, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				res, err := r.one(ctx, &ms[i], i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				results[i] = res
				done++
				if err == nil {
					fmt.Fprintf(r.log, "[%d/%d] %-10s %s\n", done, len(ms), res.Status, res.ID)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range ms {
		mu.Lock()
		stop := firstErr != nil || ctx.Err() != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return results, firstErr
}

func summarize(command string, results []Result, minScore float64) Summary {
	s := Summary{Command: command, MinScore: minScore, Results: results}
	for _, r := range results {
		switch r.Status {
		case Killed, Timeout:
			s.Killed++
		case Survived:
			s.Survived++
		case Stillborn:
			s.Stillborn++
		case Equivalent:
			s.Equivalent++
		}
	}
	s.Total = s.Killed + s.Survived
	s.Score = 1
	if s.Total > 0 {
		s.Score = float64(s.Killed) / float64(s.Total)
	}
	s.Pass = s.Score >= minScore
	return s
}

// table writes the people's report: survivors and equivalents in full, counts per file and operator.
func table(w io.Writer, s Summary) {
	type key struct{ file, op string }
	counts := map[key][2]int{}
	var keys []key
	for _, r := range s.Results {
		if r.Status == Stillborn || r.Status == Equivalent {
			continue
		}
		k := key{r.File, r.Op}
		c, ok := counts[k]
		if !ok {
			keys = append(keys, k)
		}
		if r.Status == Killed || r.Status == Timeout {
			c[0]++
		}
		c[1]++
		counts[k] = c
	}
	fmt.Fprintf(w, "\n%-36s %-9s %7s\n", "file", "operator", "killed")
	for _, k := range keys {
		c := counts[k]
		fmt.Fprintf(w, "%-36s %-9s %3d/%-3d\n", k.file, k.op, c[0], c[1])
	}
	section := func(st Status, title string) {
		first := true
		for _, r := range s.Results {
			if r.Status != st {
				continue
			}
			if first {
				fmt.Fprintf(w, "\n%s:\n", title)
				first = false
			}
			fmt.Fprintf(w, "  %s:%d  %s\n", r.File, r.Line, r.ID)
			if r.Why != "" {
				fmt.Fprintf(w, "      why: %s\n", r.Why)
			}
		}
	}
	section(Survived, "SURVIVED (no test fails without this rule)")
	section(Equivalent, "equivalent (listed in the mutant file, not run)")
	fmt.Fprintf(w, "\nkilled %d/%d (%.1f%%), %d stillborn (do not compile), %d equivalent; minimum %.1f%%: %s\n",
		s.Killed, s.Total, 100*s.Score, s.Stillborn, s.Equivalent, 100*s.MinScore, map[bool]string{true: "PASS", false: "FAIL"}[s.Pass])
	fmt.Fprintf(w, "command: %s\n", s.Command)
}

func tail(b []byte, lines int) []byte {
	ls := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return bytes.Join(ls, []byte("\n"))
}
