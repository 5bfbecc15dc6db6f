// Command glossary writes the tables of checkers in the README (what each
// asserts) and in docs/design.md (where each lives) from the registry in
// harness/check, so that they say of each checker what its own file says
// (check.Checker) and a new checker needs no hand edit of either.
//
//	go run ./tools/glossary            # rewrite both tables in place (make docs)
//	go run ./tools/glossary -check     # exit 1 when a table is stale
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/groupquake/groupquake/harness/check"
)

// The markers around the generated table in the README.
const (
	begin = "<!-- checkers: generated from harness/check by `make docs`; edit a checker's Asserts, not this table -->\n"
	end   = "<!-- checkers: end -->\n"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "glossary:", err)
		os.Exit(1)
	}
}

// docs are the files with a table of checkers, and how each draws it.
var docs = []struct {
	path  string
	table func([]check.Checker) string
}{
	{"README.md", Table},
	{"docs/design.md", Where},
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("glossary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.Bool("check", false, "only check that the tables are the registry's; change nothing")
	root := fs.String("root", ".", "the repository's top folder")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q: the command takes only -check and -root", fs.Args())
	}
	for _, d := range docs {
		path := filepath.Join(*root, d.path)
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		updated, err := Rewrite(old, d.table(check.Checkers))
		if err != nil {
			return fmt.Errorf("%s: %w", d.path, err)
		}
		switch {
		case bytes.Equal(old, updated):
			fmt.Fprintf(stdout, "%s: the table of checkers is current (%d checkers)\n", d.path, len(check.Checkers))
		case *only:
			return fmt.Errorf("%s: the table of checkers differs from harness/check's registry: run `make docs`", d.path)
		default:
			if err := os.WriteFile(path, updated, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: wrote the table of %d checkers\n", d.path, len(check.Checkers))
		}
	}
	return nil
}

// Table is the markdown table of cs, one row a checker in the order of
// their verdicts.
func Table(cs []check.Checker) string {
	var b strings.Builder
	b.WriteString("| checker | judges | what it asserts |\n|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Name, judges(c.Groups), c.Asserts)
	}
	return b.String()
}

// Where is the design's table of cs: each checker, what it judges and the
// file of harness/check that holds it.
func Where(cs []check.Checker) string {
	var b strings.Builder
	b.WriteString("| checker | judges | file |\n|---|---|---|\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "| %s | %s | `%s` |\n", c.Name, judges(c.Groups), c.File())
	}
	return b.String()
}

func judges(g check.Groups) string {
	switch g {
	case check.AnyGroup:
		return "every run"
	case check.ConsumerGroups:
		return "consumer groups"
	case check.ShareGroups:
		return "share groups"
	}
	return fmt.Sprintf("groups %#x", uint8(g))
}

// Rewrite returns doc with the table between its markers replaced by
// table. A doc without the markers, or with them out of order, is an
// error that says what to add.
func Rewrite(doc []byte, table string) ([]byte, error) {
	s := string(doc)
	i := strings.Index(s, begin)
	j := strings.Index(s, end)
	if i < 0 || j < i {
		return nil, errors.New("no table of checkers: put the lines " + strings.TrimSpace(begin) + " and " + strings.TrimSpace(end) + " where it goes")
	}
	i += len(begin)
	return []byte(s[:i] + table + s[j:]), nil
}
