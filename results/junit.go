// Package results turns a judged run into what people and CI read: JUnit
// XML with one test case per checker, and a self-contained HTML report
// (ownership timeline per partition, faults, phases, verdicts linked to the
// events that prove them) that opens offline, with no script or stylesheet
// fetched from anywhere.
//
// It reads only the history and the verdicts: no cluster, no client.
package results

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/groupquake/groupquake/harness/check"
)

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes verdicts as one JUnit test suite named suite: a test
// case per checker, failed with its violations (and the events that show
// them), skipped with the reason, notes as system-out.
func WriteJUnit(w io.Writer, suite string, verdicts []check.Verdict) error {
	s := junitSuite{Name: suite, Tests: len(verdicts)}
	for _, v := range verdicts {
		c := junitCase{Name: v.Name, Classname: "groupquake." + suite, SystemOut: strings.Join(v.Notes, "\n")}
		switch {
		case v.Skipped != "":
			s.Skipped++
			c.Skipped = &junitMessage{Message: v.Skipped}
		case !v.Holds:
			s.Failures++
			var b strings.Builder
			for _, vi := range v.Violations {
				fmt.Fprintf(&b, "%s (events %v)\n", vi.Message, vi.EventIndexes)
			}
			c.Failure = &junitMessage{Message: fmt.Sprintf("%s: %d violations", v.Name, len(v.Violations)), Body: b.String()}
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
