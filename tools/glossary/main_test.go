package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/harness/check"
)

// TestDocsAreCurrent: the README's and the design's tables of checkers
// are the registry's, every checker with the sentence and the file its own
// file gives it.
func TestDocsAreCurrent(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-check", "-root", "../.."}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		doc, err := os.ReadFile("../../" + d.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range check.Checkers {
			if !strings.Contains(string(doc), "| "+c.Name+" | ") {
				t.Errorf("%s's table lacks %s", d.path, c.Name)
			}
		}
	}
}

// TestRewriteBites: a stale table, a missing checker and an invented one
// are all replaced; a doc without markers is refused with what to add.
func TestRewriteBites(t *testing.T) {
	cs := check.Checkers[:2]
	stale := "# x\n\n" + begin + "| checker | judges | what it asserts |\n|---|---|---|\n| " + cs[0].Name + " | every run | something else |\n| Invented | share groups | x |\n" + end + "after\n"
	got, err := Rewrite([]byte(stale), Table(cs))
	if err != nil {
		t.Fatal(err)
	}
	want := "# x\n\n" + begin + Table(cs) + end + "after\n"
	if string(got) != want {
		t.Errorf("rewrite:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(string(got), "Invented") || !strings.Contains(string(got), cs[1].Asserts) {
		t.Errorf("the invented row stayed or the missing one was not added:\n%s", got)
	}
	if _, err := Rewrite([]byte("# no table\n"), Table(cs)); err == nil || !strings.Contains(err.Error(), "put the lines") {
		t.Errorf("a doc without markers: %v", err)
	}
}

// TestEveryCheckerSaysWhatItJudges: every registered checker judges a
// group kind the table can name.
func TestEveryCheckerSaysWhatItJudges(t *testing.T) {
	for _, c := range check.Checkers {
		if strings.HasPrefix(judges(c.Groups), "groups ") {
			t.Errorf("%s judges groups %#x, which the glossary cannot name", c.Name, uint8(c.Groups))
		}
	}
}

// TestWhereNamesFiles: the design's table names each checker's file.
func TestWhereNamesFiles(t *testing.T) {
	w := Where(check.Checkers)
	for _, c := range check.Checkers {
		if c.File() == "" || !strings.Contains(w, "| "+c.Name+" | "+judges(c.Groups)+" | `"+c.File()+"` |") {
			t.Errorf("%s: no row naming its file %q in\n%s", c.Name, c.File(), w)
		}
	}
}
