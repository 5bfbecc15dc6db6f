// Package results turns a judged run into what people and CI read: a
// self-contained HTML report (ownership timeline per partition, faults,
// phases, verdicts linked to the events that prove them) that opens offline,
// with no script or stylesheet fetched from anywhere; the tally and the
// excerpts of violated verdicts that the command line and the test suites
// print; and the markdown a CI job shows on its summary page.
//
// JUnit comes from the test suites: each checker's verdict is a subtest
// (suites/internal/campaign), so the JUnit that gotestsum writes has one
// test case per checker per run.
//
// It reads only the history and the verdicts: no cluster, no client. The
// measures it prints (a run's pressure, an upgrade's impact, the rebalance
// cost, ownership) come computed from harness/check; it lays them out. A
// layout test at the repository's root keeps it so.
package results
