// Package history is the single source of truth of a groupquake run: one JSONL file of events that
// members, producers, the nemesis and the observer all append to, plus the final observations and
// the timers the checkers need.
//
// The model is Jepsen's: an operation is an invoke event followed by exactly one completion from the
// same process (ok: it happened; fail: it certainly did not happen; info: the outcome is unknown).
// Facts that are not calls (a partition was assigned, a flapping link went down, a phase began) are
// standalone info events. Faults are events in the same history as client calls, so checkers and reports see
// them side by side.
//
// Pairing rule, the same for the Recorder (which enforces it as events arrive) and Pairs (which
// checks a loaded history and links each invoke to its completion):
//
//  1. a process has at most one open call; invoke while one is open is an error;
//  2. ok and fail close the open call of their process and must carry the same F;
//  3. info with the F of the open call closes it (unknown outcome); any other info event is a
//     standalone fact and leaves the open call alone.
//
// What positions prove: a writer records an invoke before the request leaves and the completion
// after the answer is read, so a call took effect somewhere between its two events, and a call that
// completed before another was invoked took effect first. Two calls that overlap are concurrent:
// the order of their answers proves nothing (a request held on a paused node is applied when it
// resumes, an answer held on a frozen member's links is read seconds later). The coordinator's own
// order of writes is __consumer_offsets, in the observations.
//
// A member that does several things at once (heartbeats while it commits) therefore records them
// under separate processes, for example "m1" and "m1/hb"; checkers read the member from the payload,
// never from the process name.
//
// Process names, by convention: "m1" (a member's application thread: consume, commit, the
// assignment callbacks), "m1/hb" (its heartbeats and leave), "m1/join" (a classic member's
// JoinGroup and SyncGroup, which overlap its heartbeats), "m1/commit" (commits the member makes on
// its own), "p0" (a producer), "nemesis/3" (one fault of the schedule: faults overlap; the cuts
// and restores of a flapping link, fault-edge, are facts of its fault's process), "observer",
// "harness" (phase markers, and the stalls of the harness process its pulse saw).
//
// This package is a leaf: it imports only the standard library, so every other package (clients'
// recorders, the checkers, the report) can depend on it, and a saved run can be re-checked offline.
package history
