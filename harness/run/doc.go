// Package run is the one place that wires a groupquake run together: the
// plan, the cluster, the producers and members (the workload), the nemesis,
// the observer, the history and the checkers (docs/design.md "A run").
//
// A run goes through these steps, Jepsen's and etcd's robustness tests'
// lifecycle:
//
//  1. plan: NewPlan chooses everything random from the seed (topology,
//     members' scripts, producer rate, fault schedule), one PCG stream per
//     concern so that changing one choice leaves the others alone. Run
//     writes plan.json and rerun.sh before it touches anything; the seed
//     reproduces the plan, the history records the interleaving.
//  2. setup: start (or reach) the cluster, create the topics, build every
//     client on its own links.
//  3. warm-up: members join, staggered; it ends when every partition has
//     exactly one owner (bounded).
//  4. workload ∥ faults: producers write sequence-numbered records while the
//     nemesis runs its schedule.
//  5. heal: every fault still active is healed, before any final read.
//  6. quiesce: wait until every acknowledged record was consumed, make each
//     member commit and then hold its commits, wait for the group to be
//     Stable (all bounded).
//  7. final: the observer's last reads go to observations.json.
//  8. teardown: members leave, clients close, the cluster goes.
//
// Each phase begins with an FPhase event, so checkers can tell the heal and
// the final reads apart. After teardown the history is read back from disk
// and judged by harness/check, exactly as `groupquake check` does offline,
// and the verdicts go to verdicts.json.
//
// Members come from a kinds.Registry (harness/kinds) by kind, so a plan
// names "classic", "kgo-consumer" or "java-classic" and the crew builds
// it from a kinds.MemberSpec; the HookRecorder turns any clients.Member's
// reports into history events.
package run
