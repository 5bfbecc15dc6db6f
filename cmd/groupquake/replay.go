package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/harness/check"
	"github.com/groupquake/groupquake/harness/history"
	"github.com/groupquake/groupquake/harness/observe"
	"github.com/groupquake/groupquake/harness/replay"
)

// replayReadAttempts bounds how often the command reads again when the group
// changed while it was being read (a commit or a heartbeat that wrote
// records between the describe and the read of the log).
const replayReadAttempts = 3

const replayUsage = `Usage: groupquake replay --bootstrap ADDR --group G [--kafka VERSION] [--json]

Reads the group's partition of __consumer_offsets, replays its records through
groupquake's reference coordinator as Kafka VERSION does when it loads them,
and prints the state it rebuilds beside what the broker describes
(DescribeGroups or ConsumerGroupDescribe, and OffsetFetch), marking every
difference with '≠'.

Exit status: 0 they agree, 1 they differ, 2 bad input (flags, a group with
no records), 3 the cluster could not be read (down, unreachable).
`

// replayJSON is what `replay --json` prints: every compared fact, the
// differences, and whether the replay agrees with the broker.
type replayJSON struct {
	SchemaVersion int         `json:"schema_version"`
	Group         string      `json:"group"`
	Kafka         string      `json:"kafka"`
	Bootstrap     []string    `json:"bootstrap"`
	Partition     int32       `json:"partition"`
	Records       int         `json:"records"`
	Snapshot      string      `json:"snapshot"`
	Agree         bool        `json:"agree"`
	Error         string      `json:"error,omitempty"`
	Rows          []replayRow `json:"rows"`
	// Differences are the checker's messages, one per difference.
	Differences []string `json:"differences"`
}

// replayRow is one compared fact: the replayed value beside the described
// one. "-" is a value not reported, which is not compared.
type replayRow struct {
	What      string `json:"what"`
	Replayed  string `json:"replayed"`
	Described string `json:"described"`
	Compared  bool   `json:"compared"`
	Differs   bool   `json:"differs"`
}

// cmdReplay reads a group's __consumer_offsets partition from a live
// cluster, replays it through the reference coordinator as the given Kafka
// release, and prints the result beside what the broker describes:
// RecoveredStateMatchesLog on one live snapshot, for a person to read.
func cmdReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("replay", replayUsage)
	bootstrap := fs.String("bootstrap", "", "host:port[,host:port] of the cluster (required)")
	group := fs.String("group", "", "the group to replay (required)")
	kafka := fs.String("kafka", "", "Kafka version of the cluster's brokers, which decides how the records are replayed and described (default "+version.Default.String()+")")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long reading the cluster may take")
	asJSON := fs.Bool("json", false, "print the compared facts and the differences as JSON on stdout")
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	seeds, ver, err := replayTarget(*bootstrap, *group, *kafka, *timeout, con)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ClientID("groupquake-replay"))
	if err != nil {
		return badInput("--bootstrap %s: %v", *bootstrap, err)
	}
	adm := kadm.NewClient(cl)
	defer adm.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	r := observe.Reader{Admin: adm, Bootstrap: seeds, Group: *group}
	// The log first: a group without records is a wrong name, which the
	// describe APIs would only answer with GROUP_ID_NOT_FOUND.
	// A cluster that cannot be read is a command that could not be carried
	// out (exit 3), not bad input: the address may be right and the cluster
	// down.
	unreachable := func(what string, err error) error {
		if ierr := signalled(ctx, "while reading "+what); ierr != nil {
			return ierr
		}
		return exitError{exitFailed, fmt.Sprintf("reading %s from %s: %v (is the cluster up, and --bootstrap its address?)", what, *bootstrap, err)}
	}
	if recs, part, err := r.Records(ctx); err != nil {
		return unreachable("group "+*group, err)
	} else if len(recs) == 0 {
		return badInput("group %s has no records in %s-%d of %s: is the group name right?", *group, observe.OffsetsTopic, part, *bootstrap)
	}
	snap, part, err := readStable(ctx, &r)
	if err != nil {
		return unreachable("group "+*group, err)
	}
	ids, err := r.TopicIDs(ctx, nil, snap.Records)
	if err != nil {
		return unreachable("topic ids", err)
	}
	names, err := replay.TopicNames(ids)
	if err != nil {
		return err
	}
	fn, err := replay.Func(ver, *group, names)
	if err != nil {
		return badInput("%v", err)
	}
	out := replayJSON{SchemaVersion: schemaVersion, Group: *group, Kafka: ver, Bootstrap: seeds, Partition: part, Records: len(snap.Records), Snapshot: snap.Label, Rows: []replayRow{}, Differences: []string{}}
	st, err := fn(snap.Records)
	if err != nil {
		out.Error = "the replay refuses what the broker wrote: " + err.Error()
		if *asJSON {
			if err := writeJSON(stdout, out); err != nil {
				return err
			}
		}
		return exitError{exitViolation, out.Error}
	}
	v := check.RecoveredStateMatchesLog(&history.Observations{Group: *group, Final: snap}, func([]history.Record) (check.GroupState, error) { return st, nil })
	out.Rows, out.Agree = sideBySide(st, snap), v.Holds
	for _, x := range v.Violations {
		out.Differences = append(out.Differences, strings.TrimPrefix(x.Message, "snapshot live: "))
	}
	if err := printReplay(stdout, out, *asJSON); err != nil {
		return err
	}
	if !v.Holds {
		return exitError{exitViolation, fmt.Sprintf("the replay of group %s differs from what the broker describes in %d places", *group, len(v.Violations))}
	}
	return nil
}

// replayTarget checks replay's flags: it returns the bootstrap addresses
// and the Kafka version to replay as.
func replayTarget(bootstrap, group, kafka string, timeout time.Duration, con *console) (seeds []string, ver string, err error) {
	if bootstrap == "" || group == "" {
		return nil, "", badInput("replay needs --bootstrap and --group (see 'groupquake replay -h')")
	}
	if timeout <= 0 {
		return nil, "", badInput("--timeout %s: give a positive time, such as 2m", timeout)
	}
	seeds = strings.Split(bootstrap, ",")
	for _, a := range seeds {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return nil, "", badInput("--bootstrap %q: %q is not host:port; give host:port[,host:port]", bootstrap, a)
		}
	}
	ver = kafka
	if ver != "" {
		if _, err := version.Parse(ver); err != nil {
			return nil, "", badInput("--kafka: %v (groupquake version lists them)", err)
		}
	} else {
		ver = version.Default.String()
		con.Infof("--kafka not given: replaying as Kafka %s; name the brokers' version if it is another (the records and the describe APIs differ between releases)", ver)
	}
	return seeds, ver, nil
}

// printReplay prints the replayed state beside the described one and the
// differences, as JSON or as a table.
func printReplay(stdout io.Writer, out replayJSON, asJSON bool) error {
	if asJSON {
		return writeJSON(stdout, out)
	}
	fmt.Fprintf(stdout, "group %s: %d records of %s-%d replayed as Kafka %s\n", out.Group, out.Records, observe.OffsetsTopic, out.Partition, out.Kafka)
	printRows(stdout, out.Rows)
	if !out.Agree {
		fmt.Fprintf(stdout, "\n%d differences:\n", len(out.Differences))
		for _, d := range out.Differences {
			fmt.Fprintf(stdout, "  ≠ %s\n", d)
		}
	} else {
		fmt.Fprintln(stdout, "\nthe replayed state is what the broker describes")
	}
	return nil
}

// readStable reads the description and the committed offsets, then the
// records, then the description and offsets again, and repeats while the two
// reads differ: a group that changes while it is read would otherwise show
// differences that are only the time between two requests. The describe
// asks the replayed protocol's API first.
func readStable(ctx context.Context, r *observe.Reader) (history.Snapshot, int32, error) {
	for attempt := 1; ; attempt++ {
		s := history.Snapshot{Label: "live", HistoryLen: 1}
		before, err := describeAndFetch(ctx, r, &s)
		if err != nil {
			return s, -1, err
		}
		recs, part, err := r.Records(ctx)
		if err != nil {
			return s, part, err
		}
		s.Records, s.HasRecords = recs, true
		var again history.Snapshot
		after, err := describeAndFetch(ctx, r, &again)
		if err != nil {
			return s, part, err
		}
		if before == after || attempt == replayReadAttempts {
			if before != after {
				s.Label += fmt.Sprintf(" (the group kept changing over %d reads; differences may be only that)", attempt)
			}
			return s, part, nil
		}
	}
}

// describeAndFetch fills s with the description and the committed offsets
// and returns a canonical rendering of both, to tell whether they changed.
func describeAndFetch(ctx context.Context, r *observe.Reader, s *history.Snapshot) (string, error) {
	g, err := r.Describe(ctx)
	if err != nil {
		return "", err
	}
	c, err := r.Committed(ctx)
	if err != nil {
		return "", err
	}
	s.Group, s.Committed, s.HasCommitted = g, c, true
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %d %d %d\n", g.Protocol, g.State, g.Generation, g.GroupEpoch, g.AssignmentEpoch)
	ms := slices.Clone(g.Members)
	slices.SortFunc(ms, func(a, b history.MemberDescription) int { return strings.Compare(a.MemberID, b.MemberID) })
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %d %v\n", m.MemberID, m.MemberEpoch, m.Assignment)
	}
	fmt.Fprintf(&b, "%v", c)
	return b.String(), nil
}

// sideBySide returns one row per compared fact, the replayed value beside
// the described one. "-" is a value the broker does not report
// (DescribeGroups has no generation, classic members no epoch), which is not
// compared.
func sideBySide(st check.GroupState, s history.Snapshot) []replayRow {
	var rows []replayRow
	row := func(what, replayed, described string, compared bool) {
		rows = append(rows, replayRow{What: what, Replayed: replayed, Described: described, Compared: compared, Differs: compared && replayed != described})
	}
	epoch := func(what string, replayed, described int32) {
		if described == 0 {
			row(what, strconv.Itoa(int(replayed)), "-", false)
			return
		}
		row(what, strconv.Itoa(int(replayed)), strconv.Itoa(int(described)), true)
	}
	g := s.Group
	if g == nil {
		g = &history.GroupDescription{}
	}
	row("protocol", orDash(st.Protocol), orDash(g.Protocol), st.Protocol != "" && g.Protocol != "")
	row("state", "-", orDash(g.State), false)
	switch {
	case st.Protocol == history.ProtocolClassic || g.Protocol == history.ProtocolClassic:
		epoch("generation", st.Generation, g.Generation)
	default:
		epoch("group epoch", st.GroupEpoch, g.GroupEpoch)
		epoch("assignment epoch", st.AssignmentEpoch, g.AssignmentEpoch)
	}
	for _, m := range check.PairMembers(st, g) {
		switch id := m.ID; {
		case !m.InDescription:
			row("member "+id, "present", "absent", true)
		case !m.InReplay:
			row("member "+id, "absent", "present", true)
		default:
			epoch("member "+id+" epoch", m.Replayed.MemberEpoch, m.Described.MemberEpoch)
			row("member "+id+" assignment", tps(m.Replayed.Assignment), tps(m.Described.Assignment), true)
		}
	}
	offsets := map[history.TP][2]string{}
	for tp, o := range st.Offsets {
		offsets[tp] = [2]string{strconv.FormatInt(o, 10), "none"}
	}
	for _, o := range s.Committed {
		if o.Offset < 0 {
			continue
		}
		v, ok := offsets[o.TP()]
		if !ok {
			v[0] = "none"
		}
		v[1] = strconv.FormatInt(o.Offset, 10)
		offsets[o.TP()] = v
	}
	keys := make([]history.TP, 0, len(offsets))
	for tp := range offsets {
		keys = append(keys, tp)
	}
	history.SortTPs(keys)
	for _, tp := range keys {
		row("offset "+tp.String(), offsets[tp][0], offsets[tp][1], true)
	}
	return rows
}

// printRows prints the rows as a table, with '≠' where they differ.
func printRows(w io.Writer, rows []replayRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\t\treplayed\tdescribed")
	for _, r := range rows {
		mark := " "
		if r.Differs {
			mark = "≠"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark, r.What, r.Replayed, r.Described)
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tps(ts []history.TP) string {
	if len(ts) == 0 {
		return "[]"
	}
	c := slices.Clone(ts)
	history.SortTPs(c)
	parts := make([]string, len(c))
	for i, t := range c {
		parts[i] = t.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}
