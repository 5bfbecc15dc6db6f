package groupquake_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// trackedFiles lists the files git tracks in this checkout.
func trackedFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v (the repository tests read the checkout's tracked files: run them in a git checkout)", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("git ls-files listed no file")
	}
	return files
}

// maxTracked is the largest file the repository keeps outside testdata:
// anything bigger is a build output or a download, not source.
const maxTracked = 1 << 20

// bigOrBinary says why a tracked file does not belong in the repository,
// or "" when it does.
func bigOrBinary(name string, size int64, head []byte) string {
	if strings.Contains("/"+name, "/testdata/") {
		return ""
	}
	if size > maxTracked {
		return "is over 1 MB"
	}
	for _, magic := range [][]byte{[]byte("\x7fELF"), []byte("MZ"), {0xcf, 0xfa, 0xed, 0xfe}, []byte("PK\x03\x04")} {
		if bytes.HasPrefix(head, magic) {
			return "is a compiled binary or an archive"
		}
	}
	return ""
}

// TestNoBuildOutputsTracked: the repository holds sources, not what they
// build (a compiled groupquake once came in with a merge and made up 90% of
// a clone).
func TestNoBuildOutputsTracked(t *testing.T) {
	for _, f := range trackedFiles(t) {
		fi, err := os.Lstat(f)
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink
		}
		head := make([]byte, 4)
		if fh, err := os.Open(f); err == nil {
			n, _ := fh.Read(head)
			head = head[:n]
			fh.Close()
		}
		if why := bigOrBinary(f, fi.Size(), head); why != "" {
			t.Errorf("%s %s: build outputs are never committed (git rm --cached it and cover it in .gitignore)", f, why)
		}
	}
}

func TestBigOrBinaryBites(t *testing.T) {
	for _, c := range []struct {
		name string
		size int64
		head string
		bad  bool
	}{
		{"groupquake", 36 << 20, "\x7fELF", true},
		{"cmd/tool", 1000, "\x7fELF", true},
		{"README.md", 2 << 20, "# gr", true},
		{"harness/check/testdata/run/history.jsonl", 5 << 20, "{\"in", false},
		{"go.sum", 20000, "gith", false},
	} {
		if got := bigOrBinary(c.name, c.size, []byte(c.head)); (got != "") != c.bad {
			t.Errorf("bigOrBinary(%s, %d) = %q, want bad=%v", c.name, c.size, got, c.bad)
		}
	}
}

// outside matches what makes the repository lean on one machine: a file
// outside it, or an absolute path of the machine it was written on.
var outside = regexp.MustCompile(`\.\./shared\b|/work/|/root/|/Users/[A-Za-z]`)

// TestStandsAlone: nothing in the repository refers to a file outside it or
// to one machine's paths; its own design lives in docs/.
func TestStandsAlone(t *testing.T) {
	for _, f := range trackedFiles(t) {
		if f == "repo_test.go" || strings.Contains("/"+f, "/testdata/") || f == "LICENSE" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil || bytes.IndexByte(b, 0) >= 0 {
			continue
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d refers to %q, outside the repository or on one machine: the project must stand alone", f, i+1, m)
			}
		}
	}
}

func TestOutsideBites(t *testing.T) {
	for _, s := range []string{"see ../" + "shared/DESIGN.md", "flock /work/locks/cluster go test", "cd /root/go"} {
		if !outside.MatchString(s) {
			t.Errorf("%q is not caught", s)
		}
	}
	for _, s := range []string{"docs/design.md", "/var/log/groupquake-dockerd.log", "shared JVM"} {
		if outside.MatchString(s) {
			t.Errorf("%q is caught", s)
		}
	}
}

// mdLink matches a markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinksResolve: every relative link of the README and docs/ leads to a
// file of the repository (and an anchor, when it names one, to a heading).
func TestDocLinksResolve(t *testing.T) {
	var pages []string
	for _, f := range trackedFiles(t) {
		if strings.HasSuffix(f, ".md") && (f == "README.md" || strings.HasPrefix(f, "docs/")) {
			pages = append(pages, f)
		}
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s links to %s, which does not exist", page, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(path, ".md") && !hasAnchor(t, path, anchor) {
				t.Errorf("%s links to %s, but %s has no heading with that anchor", page, target, path)
			}
		}
	}
}

// hasAnchor says whether a markdown file has a heading whose GitHub anchor is a.
func hasAnchor(t *testing.T, path, a string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var sb strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				sb.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				sb.WriteRune(r)
			}
		}
		if sb.String() == a {
			return true
		}
	}
	return false
}

// TestReadmeIsAUserPage: the README stays a page a user reads in minutes;
// measurements, findings and the design live in docs/.
func TestReadmeIsAUserPage(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= 400 {
		t.Errorf("README.md has %d lines: keep it under 400 and move the detail to docs/", n)
	}
}
