package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/coordinator/version"
)

func TestPrintsTheProfileLists(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run([]string{"-pinned"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), version.Default.String()+",4.1.2"; got != want {
		t.Errorf("-pinned printed %q, want %q", got, want)
	}
	out.Reset()
	if err := run([]string{"-json"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := json.Unmarshal(out.Bytes(), &names); err != nil {
		t.Fatalf("-json printed %q: %v", out.String(), err)
	}
	if len(names) != len(version.Served()) || names[0] != version.Served()[0].String() {
		t.Errorf("-json printed %v, want every served release", names)
	}
	if err := run([]string{"extra"}, &out, &errb); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("an extra argument gave %v", err)
	}
}
