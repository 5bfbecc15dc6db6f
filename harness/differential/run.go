package differential

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/groupquake/groupquake/coordinator"
	"github.com/groupquake/groupquake/coordinator/consumergroup"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/sharegroup"
	"github.com/groupquake/groupquake/coordinator/vectors"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Settings are the group settings a target must run with, and the ones the
// reference is configured with (referenceConfig) to match: no initial
// rebalance delay, classic sessions from 1s to 30m as the vectors' `new`
// defaults, and the consumer protocol's Kafka defaults (5s heartbeat
// interval, 45s session), which the consumer vectors print in every
// heartbeat. Where the release has the assignment interval (KIP-1263,
// version.Profile.AssignmentInterval) it is 0, as
// cluster.FastGroupSettings sets it. Pass them as cluster.Config.Settings
// (over FastGroupSettings) or kfake.BrokerConfigs.
func Settings(kafkaVersion string) map[string]string {
	v, err := version.Parse(kafkaVersion)
	if err != nil {
		return SettingsFor(version.Profile{})
	}
	return SettingsFor(v.Profile())
}

// SettingsFor is Settings for the release p describes: the assignment
// interval is set where p.AssignmentInterval says the config exists.
func SettingsFor(p version.Profile) map[string]string {
	s := map[string]string{
		"group.initial.rebalance.delay.ms":     "0",
		"group.min.session.timeout.ms":         "1000",
		"group.max.session.timeout.ms":         "1800000",
		"group.consumer.heartbeat.interval.ms": "5000",
		"group.consumer.session.timeout.ms":    "45000",
	}
	if p.AssignmentInterval {
		s["group.consumer.assignment.interval.ms"] = "0"
		s["group.consumer.min.assignment.interval.ms"] = "0"
	}
	// Share groups (4.2+): Kafka's share session and heartbeat interval,
	// which the share vectors print, over FastGroupSettings' short ones;
	// no assignment batching where the release has it (4.3+).
	if p.ShareGroups == version.ShareProduction {
		s["group.share.session.timeout.ms"] = "45000"
		s["group.share.heartbeat.interval.ms"] = "5000"
		if p.ShareAssignmentInterval {
			s["group.share.assignment.interval.ms"] = "0"
			s["group.share.min.assignment.interval.ms"] = "0"
		}
	}
	return s
}

// Target is a group coordinator to compare with the reference.
type Target struct {
	// Name says what it is: "kafka" or "kfake".
	Name string
	// Version is the Kafka release whose version profile the reference
	// runs with beside it.
	Version string
	// Profile, when its Version is set, is the version profile the
	// reference runs with instead of Version's: a release being added to
	// coordinator/version can be compared before it is served.
	Profile version.Profile
	// Addr is a broker that coordinates every group (a one-node cluster):
	// requests go to it directly, so that nothing retries or redirects
	// them.
	Addr string
	// JavaVersion is the target's JDK major version, which decides some
	// iteration orders of the uniform assignor; 0 means the reference's
	// default.
	JavaVersion int
}

// Options tune Run.
type Options struct {
	// Wait bounds how long an answer the reference gave at once may take
	// from the target; 0 means 20s.
	Wait time.Duration
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
	// Namespace starts the names of every section's groups and topics,
	// followed by the section's index: runs on one target need different
	// ones. Empty means "d".
	Namespace string
	// SameHost makes every client host the target reports read as the
	// reference's "/127.0.0.1": a broker in a container sees its bridge's
	// gateway, which says nothing about the coordinator.
	SameHost bool
	// ReadsSeeWrites says that the target answers every read from its
	// latest write (kfake: one goroutine serves a group), so a read that
	// differs is not asked again (reread), which costs two seconds a time.
	ReadsSeeWrites bool
}

// Outcome of one compared answer.
type Outcome string

const (
	Same      Outcome = "same"
	Different Outcome = "different"
	Skipped   Outcome = "skipped"
)

// Result is the comparison of one answer (a step's response, or a parked
// request's completion) or one skipped step.
type Result struct {
	Section string // vector file and section, e.g. classic/rebalance.txt
	Pos     string // file:line of the step
	Command string // the step as written
	Ticket  int    // the reference's ticket (#N); 0 for a skipped step
	Outcome Outcome
	// Reference and Target are the canonical answers, Target after
	// normalisation (namespace removed, member ids substituted).
	Reference, Target string
	Why               string // why skipped, or a note
	// Records are the __consumer_offsets records the reference wrote for
	// the step's own answer, one a line (RenderRecords); set by Model only.
	Records string
}

// Report is what Run found on one target.
type Report struct {
	Target, Version string
	// Notes say how a section was adapted (re-derived version, metadata
	// image), per section.
	Notes   []string
	Results []Result
}

// Count returns the number of results with outcome o.
func (r Report) Count(o Outcome) int {
	n := 0
	for _, x := range r.Results {
		if x.Outcome == o {
			n++
		}
	}
	return n
}

// String renders the report for a person: a summary line, notes, then every
// result in order.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "differential run against %s %s: %d same, %d different, %d skipped\n",
		r.Target, r.Version, r.Count(Same), r.Count(Different), r.Count(Skipped))
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, x := range r.Results {
		head := fmt.Sprintf("%s %s %s", x.Outcome, x.Pos, x.Command)
		if x.Ticket > 0 {
			head += fmt.Sprintf(" (#%d)", x.Ticket)
		}
		switch x.Outcome {
		case Same:
			fmt.Fprintf(&b, "%s\n", head)
		case Skipped:
			fmt.Fprintf(&b, "%s: %s\n", head, x.Why)
		case Different:
			fmt.Fprintf(&b, "%s\n  reference: %s\n  target:    %s\n", head, indent(x.Reference), indent(x.Target))
			if x.Why != "" {
				fmt.Fprintf(&b, "  why: %s\n", x.Why)
			}
		}
	}
	return b.String()
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n             ") }

// Run replays secs against t beside a reference coordinator with t's
// version profile and returns every comparison. An error means the run
// itself failed (the target cannot be reached, a topic cannot be made),
// not that an answer differed.
//
// How a section maps to the target:
//   - groups and topics get a namespace per section ("d007-g"), so one
//     target serves every section; the namespace is removed from answers;
//   - topics are created on the target as the section's `new topics=`
//     lists them or, without that, as the section uses them (the reference
//     then gets the same metadata image, since a broker has one);
//   - a member id the target generates is bound to the reference's id in
//     the same answer, substituted into later requests and back in answers;
//   - `state`, `records`, `replay` read internal state: skipped;
//   - `tick 0s` lets the reference's due timers fire, as a broker's do at
//     once; a tick that moves time, and `restart`, end the section (the
//     rest is skipped): the target's clock is real and sessions of seconds
//     cannot be replayed without asserting durations;
//   - `create-topic` and `set-topics` (a metadata change) end the section:
//     when a broker's group coordinator sees the change is its own;
//   - a request the reference refuses (a version its profile does not
//     serve) is the same answer if the target does not advertise that
//     version either, and is not sent: a broker closes the connection on it;
//   - a `new` that needs broker settings the target does not run with
//     (delay, max-size, min/max-session, migration, consumer-heartbeat,
//     consumer-max-size, assignors) skips the section, every step saying
//     which setting; settings that
//     only act when time passes (new-member-timeout, retention,
//     consumer-session, assignment-interval) are replaced by the target's.
func Run(ctx context.Context, t Target, secs []Section, opt Options) (Report, error) {
	if opt.Wait == 0 {
		opt.Wait = 20 * time.Second
	}
	if opt.Namespace == "" {
		opt.Namespace = "d"
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	p := t.Profile
	if p.Version == 0 {
		v, err := version.Parse(t.Version)
		if err != nil {
			return Report{}, err
		}
		p = v.Profile()
	}
	t.Version = p.Version.String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(t.Addr))
	if err != nil {
		return Report{}, fmt.Errorf("kgo client for %s: %v", t.Addr, err)
	}
	defer cl.Close()
	r := &runner{t: t, p: p, opt: opt, adm: kadm.NewClient(cl), rep: Report{Target: t.Name, Version: t.Version}}
	if r.served, err = apiVersions(ctx, t.Addr, opt.Wait); err != nil {
		return r.rep, err
	}
	for i, s := range secs {
		if err := ctx.Err(); err != nil {
			return r.rep, err
		}
		start, n := time.Now(), len(r.rep.Results)
		if err := r.section(ctx, i, s); err != nil {
			return r.rep, fmt.Errorf("%s: %v", s.Name(), err)
		}
		diff := 0
		for _, x := range r.rep.Results[n:] {
			if x.Outcome == Different {
				diff++
			}
		}
		opt.Logf("%s %s: %s: %d results, %d different (%v)", t.Name, t.Version, s.Name(), len(r.rep.Results)-n, diff, time.Since(start).Round(time.Millisecond))
	}
	return r.rep, nil
}

// referenceConfig is the reference coordinator's configuration beside a
// target that runs SettingsFor(p): the same timers, the target's JDK.
func referenceConfig(p version.Profile, topics coordinator.TopicMetadata, javaVersion int) coordinator.Config {
	cfg := coordinator.Config{
		MinSessionTimeout: time.Second,
		MaxSessionTimeout: 30 * time.Minute,
		Topics:            topics,
		IDs:               &vectors.ShortIDs{},
		Consumer: consumergroup.Config{
			SessionTimeout:    45 * time.Second,
			HeartbeatInterval: 5 * time.Second,
			JavaVersion:       javaVersion,
		},
	}
	if p.AssignmentInterval {
		zero := time.Duration(0)
		cfg.Consumer.AssignmentInterval = &zero
	}
	cfg.Share = coordinator.ShareConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second}
	if p.ShareAssignmentInterval {
		zero := time.Duration(0)
		cfg.Share.AssignmentInterval = &zero
	}
	return cfg
}

type runner struct {
	// served is the target's ApiVersions: key → min, max.
	served map[int16][2]int16
	t      Target
	p      version.Profile
	opt    Options
	adm    *kadm.Client
	rep    Report
	// sent maps a section's requests (sameRequests) to the first section
	// that sent them.
	sent map[string]string
}

// brokerNewArgs lists the `new` arguments that are broker settings the
// target runs with fixed (Settings), with the value they amount to: a
// section that asks for another cannot run.
func brokerNewArgs() [][2]string {
	return [][2]string{{"delay", "0s"}, {"max-session", "30m0s"}, {"max-size", "0"}, {"min-session", "1s"}, {"migration", "bidirectional"},
		{"consumer-heartbeat", "5s"}, {"consumer-max-size", "0"}, {"assignors", "uniform,range"},
		{"share-max-size", "0"}, {"share-assignment-interval", "0s"}}
}

// needsBrokerSetting says why a section whose `new` is newArgs cannot run
// on a target with Settings, "" if it can.
func needsBrokerSetting(newArgs Step) string {
	for _, kv := range brokerNewArgs() {
		key, want := kv[0], kv[1]
		if !hasArg(newArgs.Args, key) {
			continue
		}
		got := strings.Join(argList(newArgs.Args, key), ",")
		if d, err := time.ParseDuration(got); err == nil {
			got = d.String()
		}
		if got != want {
			return fmt.Sprintf("section needs broker setting %s=%s; the target runs %s (differential.Settings)", key, got, want)
		}
	}
	return ""
}

// endsSection says why step st ends its section on a target (every step
// from it on is skipped with that reason), "" if it does not.
func endsSection(st Step) string {
	switch st.Cmd {
	case "tick":
		if d, err := time.ParseDuration(argKey(st)); err == nil && d == 0 {
			return ""
		}
		return fmt.Sprintf("after %s at %s: the target's clock is real (section ends)", command(st), st.Pos)
	case "restart":
		return fmt.Sprintf("after restart at %s: the target's coordinator does not move (section ends)", st.Pos)
	case "create-topic":
		return fmt.Sprintf("after create-topic at %s: a regex sees a new topic only after 10s of the target's real clock (section ends)", st.Pos)
	case "set-topics":
		return fmt.Sprintf("after set-topics at %s: the vector deletes topics or adds partitions, which a broker's group coordinator sees only when its metadata image catches up, at no step the runner can pin (section ends)", st.Pos)
	}
	return ""
}

// sameRequests says why section s is not sent, "" if it is: an earlier
// section of its file sent the same requests, with the same settings, and
// only the release its `new` pins differs. The reference re-derives every
// expectation with the target's profile, so the target would be asked the
// same questions for the same expected answers again; vectors that show
// one scenario on several releases (one section per release) are compared
// once. sent records s otherwise.
func sameRequests(sent map[string]string, s Section) string {
	var b strings.Builder
	b.WriteString(s.File)
	if s.New != nil {
		for _, a := range s.New.Args {
			if a.Key != "version" {
				b.WriteString(" " + a.String())
			}
		}
	}
	for _, st := range s.Steps {
		b.WriteString("\n" + command(st))
	}
	key := b.String()
	if first, ok := sent[key]; ok {
		return fmt.Sprintf("the requests of %s again (only the pinned release differs; the expectations are the target's release's either way): compared once", first)
	}
	sent[key] = s.Name()
	return ""
}

// nothingToSend reports whether section s ends (endsSection) before any
// request step, and then why each step is skipped, as the run would skip
// it: a section that sends nothing needs no topics or probes on the target
// (seconds each).
func nothingToSend(s Section) ([]string, bool) {
	whys := make([]string, len(s.Steps))
	for i, st := range s.Steps {
		if end := endsSection(st); end != "" {
			for j := i; j < len(s.Steps); j++ {
				whys[j] = end
			}
			return whys, true
		}
		switch st.Cmd {
		case "state", "records", "replay":
			whys[i] = "reads the reference's internal state"
		case "tick": // tick 0s: the reference's timers only
			whys[i] = "moves no time and sends no request"
		default:
			return nil, false
		}
	}
	return whys, true
}

// timeOnlyNewArgs lists the `new` arguments that act only when time passes,
// which Run never lets it do.
func timeOnlyNewArgs() []string {
	return []string{"new-member-timeout", "retention", "retention-check", "consumer-session", "assignment-interval", "regex-refresh", "share-session"}
}

// section compares section idx of the vectors, s, on the target and the
// reference coordinator, step by step, unless it is skipped whole.
func (r *runner) section(ctx context.Context, idx int, s Section) error {
	name := s.Name()
	if r.skipSection(s) {
		return nil
	}
	img, derived := sectionTopics(s)
	r.noteAdapted(s, img, derived)
	tn, err := r.prepareTarget(ctx, idx, s, img)
	if err != nil {
		return err
	}
	ref, err := coordinator.New(r.p, referenceConfig(r.p, img, r.t.JavaVersion))
	if err != nil {
		return fmt.Errorf("reference coordinator: %v", err)
	}
	sec := &sectionRun{r: r, name: name, ref: ref, tn: tn, flights: map[int]*flight{}, refParked: map[int]Step{}}
	defer sec.close()
	now := time.UnixMilli(0).UTC()
	for i, st := range s.Steps {
		end, err := sec.step(ctx, now, st)
		if err != nil {
			return err
		}
		if end != "" {
			for _, rest := range s.Steps[i:] {
				sec.skip(rest, end)
			}
			break
		}
	}
	sec.finish()
	return nil
}

// skipSection reports every step of section s as skipped, and returns
// true, when the section is not compared: it needs a broker setting the
// target does not have, its requests were compared already, or it ends
// before it sends any.
func (r *runner) skipSection(s Section) bool {
	name := s.Name()
	skipAll := func(why string) {
		for _, st := range s.Steps {
			r.rep.Results = append(r.rep.Results, Result{Section: name, Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: why})
		}
	}
	var newArgs = Step{}
	if s.New != nil {
		newArgs = *s.New
	}
	if why := needsBrokerSetting(newArgs); why != "" {
		skipAll(why)
		return true
	}
	if why := shareBefore42(r.p, s); why != "" {
		skipAll(why)
		return true
	}
	if r.sent == nil {
		r.sent = map[string]string{}
	}
	if why := sameRequests(r.sent, s); why != "" {
		skipAll(why)
		return true
	}
	if whys, ok := nothingToSend(s); ok {
		// No request before the section ends: no topics, no namespace.
		for i, st := range s.Steps {
			r.rep.Results = append(r.rep.Results, Result{Section: name, Pos: st.Pos, Command: command(st), Outcome: Skipped, Why: whys[i]})
		}
		return true
	}
	return false
}

// shareBefore42 says why a section of share-group requests is not
// compared with a target whose release has share groups only as early
// access or preview (4.0, 4.1), "" otherwise. The share vectors describe
// production share groups (4.2+); an older broker advertises the share
// APIs (4.1: ShareGroupHeartbeat v1) that the reference, serving them only
// where a cluster the release formats has share groups on, refuses.
func shareBefore42(p version.Profile, s Section) string {
	if p.ShareGroups == version.ShareProduction {
		return ""
	}
	if s.Share() {
		return fmt.Sprintf("share groups are %s in Kafka %s: the share vectors are compared with releases where they are production-ready (4.2 and later)", p.ShareGroups, p.Version)
	}
	return ""
}

// noteAdapted notes in the report what of section s the run adapts to the
// target: the pinned release, the settings that act only as time passes,
// a metadata image derived from the topics it uses (img, when derived).
func (r *runner) noteAdapted(s Section, img image, derived bool) {
	var newArgs = Step{}
	if s.New != nil {
		newArgs = *s.New
	}
	var adapted []string
	if pin := argVal(newArgs.Args, "version", ""); pin != "" && pin != r.t.Version {
		adapted = append(adapted, fmt.Sprintf("expectations re-derived with the %s profile (vector pins %s)", r.t.Version, pin))
	}
	for _, k := range timeOnlyNewArgs() {
		if hasArg(newArgs.Args, k) {
			adapted = append(adapted, fmt.Sprintf("%s=%s replaced by the target's setting (acts only when time passes)", k, argVal(newArgs.Args, k, "")))
		}
	}
	if derived && len(img) > 0 {
		adapted = append(adapted, "metadata image derived from the topics the section uses: "+img.String()+" (the reference gets it too)")
	}
	if len(adapted) > 0 {
		r.rep.Notes = append(r.rep.Notes, s.Name()+": "+strings.Join(adapted, "; "))
	}
}

// prepareTarget gives section idx its namespace on the target, creates the
// topics of img there, warms the coordinator up and, for the consumer
// protocol, waits until the group coordinator sees the topics.
func (r *runner) prepareTarget(ctx context.Context, idx int, s Section, img image) (*targetNames, error) {
	ns := fmt.Sprintf("%s%03d-", r.opt.Namespace, idx)
	tn := &targetNames{ns: ns, ids: map[string][16]byte{}, byID: map[[16]byte]string{}, toTarget: map[string]string{}, toRef: map[string]string{}}
	if err := r.createTopics(ctx, tn, img); err != nil {
		return nil, err
	}
	if err := r.warmUp(ctx, tn, s); err != nil {
		return nil, err
	}
	if usesConsumerProtocol(s) || usesShareProtocol(s) {
		// A share group's heartbeat reads the same metadata image: a topic
		// it does not see yet is neither initialized nor assigned.
		if err := r.probeConsumerTopics(ctx, tn, img); err != nil {
			return nil, err
		}
	}
	return tn, nil
}

// step runs step st of the section on the reference and the target and
// answers it. end is not empty when st ends the section: why it and the
// steps after it are skipped.
func (sec *sectionRun) step(ctx context.Context, now time.Time, st Step) (end string, err error) {
	ref, tn := sec.ref, sec.tn
	switch st.Cmd {
	case "state", "records", "replay":
		sec.skip(st, "reads the reference's internal state")
		return "", nil
	case "tick":
		d, err := time.ParseDuration(argKey(st))
		if err != nil {
			return "", fmt.Errorf("%s: tick: %v", st.Pos, err)
		}
		if d == 0 {
			ref.Tick(now)
			sec.answer(st, nil)
			return "", nil
		}
	}
	if why := endsSection(st); why != "" {
		return why, nil
	}
	refReq, ok, err := buildRequest(vectors.Identity{}, st)
	if err != nil {
		return "", err
	}
	if !ok {
		sec.skip(st, fmt.Sprintf("unknown command %q", st.Cmd))
		return "", nil
	}
	out, err := ref.Submit(now, coordinator.Client{ID: clientID(st), Host: "/127.0.0.1"}, refReq)
	if err != nil {
		sec.refused(st, int(out.Ticket), refReq, err)
		return "", nil
	}
	ticket := int(out.Ticket)
	ticked := ref.Tick(now)
	resolved := regexResolutionEpoch(ticked)
	initialized := shareInitialized(ticked)
	tgtReq, _, err := buildRequest(tn, st)
	if err != nil {
		return "", err
	}
	if rng, ok := sec.r.served[tgtReq.Key()]; ok && (tgtReq.GetVersion() < rng[0] || tgtReq.GetVersion() > rng[1]) {
		sec.unsupported(st, ticket, tgtReq, rng, out)
		return "", nil
	}
	var before string
	if st.Cmd == "join" {
		before = sec.describe(ctx, tn.Group(argVal(st.Args, "group", "g")))
	}
	sec.send(ctx, ticket, st, tgtReq)
	var first *coordinator.Completion
	if out.Response != nil {
		first = &coordinator.Completion{Ticket: out.Ticket, Response: out.Response}
	} else {
		sec.refParked[ticket] = st
		if st.Cmd == "join" {
			sec.settle(ctx, tn.Group(argVal(st.Args, "group", "g")), before, sec.flights[ticket])
		}
	}
	sec.answer(st, first)
	if resolved != 0 {
		sec.awaitGroupEpoch(ctx, tn.Group(argVal(st.Args, "group", "g")), resolved)
	}
	if len(initialized) > 0 {
		sec.awaitShareInitialized(ctx, tn, argVal(st.Args, "group", "g"), initialized)
	}
	return "", nil
}

// shareInitialized is what a share group's share-partition initialization
// wrote as initialized right after a request (the reference's Tick fires
// the initialization the heartbeat asked for: its last
// ShareGroupStatePartitionMetadata record), topic name → partitions, or
// nil. A broker initializes asynchronously (the share coordinator writes
// the state, then the group coordinator records it), so the runner waits
// for the target to get there before the next step.
func shareInitialized(recs []records.Record) map[string][]int32 {
	var out map[string][]int32
	for _, r := range recs {
		k, ok := r.Key.(records.OtherKey)
		if !ok || int16(k.Type) != sharegroup.TypeStatePartitionMetadata || r.Value == nil {
			continue
		}
		key := append([]byte{byte(k.Type >> 8), byte(k.Type)}, k.Raw...)
		gr, err := sharegroup.DecodeGroupRecord(key, r.Value.(*records.OtherValue).Raw)
		if err != nil {
			continue
		}
		out = map[string][]int32{}
		for _, t := range gr.Value.(*sharegroup.StatePartitionMetadataValue).InitializedTopics {
			out[t.TopicName] = t.Partitions
		}
	}
	return out
}

// unsupported reports step st as different without sending it: the target
// serves its request's API only in versions rng (a broker closes the
// connection on a version it does not serve); out is the reference's
// outcome.
func (sec *sectionRun) unsupported(st Step, ticket int, tgtReq kmsg.Request, rng [2]int16, out coordinator.Outcome) {
	x := Result{Section: sec.name, Pos: st.Pos, Command: command(st), Ticket: ticket, Outcome: Different,
		Target: fmt.Sprintf("UNSUPPORTED_VERSION: the target serves %s v%d–v%d (ApiVersions), not v%d; not sent", kmsg.NameForKey(tgtReq.Key()), rng[0], rng[1], tgtReq.GetVersion())}
	if out.Response != nil {
		if rr, err := wireRoundTrip(out.Response); err == nil {
			x.Reference = format(rr, vectors.Identity{})
		}
	} else {
		x.Reference = "parked"
	}
	sec.r.rep.Results = append(sec.r.rep.Results, x)
	sec.answer(st, nil) // parked requests this one completed
}

// regexResolutionEpoch is the group epoch a regex resolution moved the
// reference to right after a request (its ConsumerGroupRegularExpression
// records, then the epoch bump), or 0. A broker resolves regexes
// asynchronously (GMM.maybeUpdateRegularExpressions schedules it), so the
// runner waits for the target to reach that epoch before the next step,
// as the reference's Tick applies it before the next step.
func regexResolutionEpoch(recs []records.Record) int32 {
	regex := false
	var epoch int32
	for _, r := range recs {
		switch v := r.Value.(type) {
		case *records.ConsumerGroupRegularExpressionValue:
			regex = true
		case *records.ConsumerGroupMetadataValue:
			if regex {
				epoch = v.Epoch
			}
		}
	}
	return epoch
}

// argKey is a tick's duration: its first argument's key.
func argKey(st Step) string {
	if len(st.Args) == 0 {
		return ""
	}
	return st.Args[0].Key
}

func command(st Step) string {
	var b strings.Builder
	b.WriteString(st.Cmd)
	for _, a := range st.Args {
		b.WriteString(" " + a.String())
	}
	return b.String()
}

// targetNames is a target's side of one section.
type targetNames struct {
	ns       string
	ids      map[string][16]byte // vector topic name → the target's id
	byID     map[[16]byte]string
	toTarget map[string]string // reference member id → target member id
	toRef    map[string]string
	// regexes maps a confined regex, without the namespace, back to the
	// vector's (Regex).
	regexes map[string]string
}

func (n *targetNames) Group(s string) string {
	if s == "" {
		return ""
	}
	return n.ns + s
}

func (n *targetNames) Topic(s string) string { return n.ns + s }

// Regex confines a vector's regex to the section's topics: Kafka matches
// whole topic names, so the namespace, quoted, then the vector's regex as
// a group match what the vector's regex matches among the section's
// topics and nothing else. Kafka quotes a regex it refuses in its error
// message: Text maps the confined regex back to the vector's. A regex
// that does not parse at all (RE2 syntax, which RE2/J shares) goes as
// written: it matches nothing, and confining it would change which error
// the target finds (`foo)` inside a group has one parenthesis too many in
// another place).
func (n *targetNames) Regex(s string) string {
	if s == "" {
		return ""
	}
	if _, err := regexp.Compile(s); err != nil {
		return s
	}
	wrapped := "(?:" + s + ")"
	if n.regexes == nil {
		n.regexes = map[string]string{}
	}
	n.regexes[wrapped] = s
	return regexp.QuoteMeta(n.ns) + wrapped
}

func (n *targetNames) TopicID(s string) [16]byte {
	if id, ok := n.ids[s]; ok {
		return id
	}
	return vectors.TopicID(s) // a topic the target does not have: an unknown id
}

func (n *targetNames) Member(s string) string {
	if m, ok := n.toTarget[s]; ok {
		return m
	}
	return s
}

// bind records that the target handed out tgt where the reference handed
// out ref; the first binding of either id wins.
func (n *targetNames) bind(ref, tgt string) {
	if ref == "" || tgt == "" {
		return
	}
	if _, ok := n.toTarget[ref]; ok {
		return
	}
	if _, ok := n.toRef[tgt]; ok {
		return
	}
	n.toTarget[ref], n.toRef[tgt] = tgt, ref
}

// targetNorm maps a target's answers back to the vector's names.
type targetNorm struct {
	n *targetNames
	// host, when set, stands for every client host the target reports.
	hostAs string
}

func (t targetNorm) Host(s string) string {
	if t.hostAs != "" && s != "" {
		return t.hostAs
	}
	return s
}

func (t targetNorm) Member(s string) string {
	if m, ok := t.n.toRef[s]; ok {
		return m
	}
	return s
}
func (t targetNorm) Group(s string) string { return strings.TrimPrefix(s, t.n.ns) }
func (t targetNorm) Topic(s string) string { return strings.TrimPrefix(s, t.n.ns) }
func (t targetNorm) TopicName(id [16]byte) string {
	if s, ok := t.n.byID[id]; ok {
		return s
	}
	return vectors.TopicName(id)
}
func (t targetNorm) Text(s string) string {
	s = strings.ReplaceAll(s, regexp.QuoteMeta(t.n.ns), "")
	s = strings.ReplaceAll(s, t.n.ns, "")
	for _, w := range slices.SortedFunc(maps.Keys(t.n.regexes), func(a, b string) int { return len(b) - len(a) }) {
		s = strings.ReplaceAll(s, w, t.n.regexes[w])
	}
	// Longest ids first, so that no id is replaced inside a longer one.
	tgts := slices.SortedFunc(maps.Keys(t.n.toRef), func(a, b string) int { return len(b) - len(a) })
	for _, id := range tgts {
		s = strings.ReplaceAll(s, id, t.n.toRef[id])
	}
	return s
}

// image is a metadata image: topic name → partitions, ids "T"+name as the
// vectors make them. It implements coordinator.TopicMetadata.
type image map[string]int

func (im image) TopicByName(name string) ([16]byte, int, bool) {
	n, ok := im[name]
	return vectors.TopicID(name), n, ok
}

func (im image) TopicByID(id [16]byte) (string, int, bool) {
	name := vectors.TopicName(id)
	n, ok := im[name]
	if !ok || vectors.TopicID(name) != id {
		return "", 0, false
	}
	return name, n, true
}

// TopicNames lists the image's topics, so that the reference resolves
// regex subscriptions against them (consumergroup.TopicLister).
func (im image) TopicNames() []string { return slices.Sorted(maps.Keys(im)) }

func (im image) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(im)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, im[k]))
	}
	return strings.Join(parts, ",")
}

// sectionTopics is the section's metadata image: `new topics=` as written,
// or (derived) every topic a step names, with one partition more than the
// highest it names.
func sectionTopics(s Section) (image, bool) {
	img := image{}
	if s.New != nil && hasArg(s.New.Args, "topics") {
		for _, spec := range argList(s.New.Args, "topics") {
			name, p, _ := strings.Cut(spec, ":")
			n, _ := strconv.Atoi(p)
			img[name] = n
		}
		return img, false
	}
	see := func(name string, p int) {
		if name != "" && img[name] < p+1 {
			img[name] = p + 1
		}
	}
	for _, st := range s.Steps {
		for _, key := range []string{"offsets", "partitions", "owned"} {
			for _, v := range argList(st.Args, key) {
				tp, _, _ := strings.Cut(v, "=")
				topic, ps, ok := strings.Cut(tp, "/")
				p, err := strconv.Atoi(ps)
				if ok && err == nil {
					see(topic, p)
				}
			}
		}
		for _, key := range []string{"topics", "subscribe"} {
			if st.Cmd == "new" {
				continue
			}
			for _, v := range argList(st.Args, key) {
				see(v, 0)
			}
		}
	}
	return img, true
}

func (r *runner) createTopics(ctx context.Context, tn *targetNames, img image) error {
	if len(img) == 0 {
		return nil
	}
	var want []string
	for _, name := range slices.Sorted(maps.Keys(img)) {
		full := tn.Topic(name)
		want = append(want, full)
		resp, err := r.adm.CreateTopic(ctx, int32(img[name]), 1, nil, full)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("create topic %s with %d partitions on %s: %v", full, img[name], r.t.Name, err)
		}
		tn.ids[name], tn.byID[resp.ID] = resp.ID, name
	}
	// A broker answers CreateTopics once the controller committed; its own
	// metadata cache, which OffsetCommit checks, may lag: wait until it
	// lists every partition with a leader.
	deadline := time.Now().Add(r.opt.Wait)
	for {
		md, err := r.adm.Metadata(ctx, want...)
		ready := err == nil
		if ready {
			for _, name := range want {
				td, ok := md.Topics[name]
				if !ok || td.Err != nil || len(td.Partitions) != img[strings.TrimPrefix(name, tn.ns)] {
					ready = false
					break
				}
				for _, p := range td.Partitions {
					if p.Err != nil || p.Leader < 0 {
						ready = false
					}
				}
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topics %v not in %s's metadata after %v (last error %v)", want, r.t.Name, r.opt.Wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// warmUp waits until the coordinator of every group the section names is
// loaded, so that no step meets COORDINATOR_LOAD_IN_PROGRESS or
// COORDINATOR_NOT_AVAILABLE, answers the reference never gives. An
// OffsetFetch of a group that does not exist creates nothing.
func (r *runner) warmUp(ctx context.Context, tn *targetNames, s Section) error {
	groups := map[string]bool{"g": true}
	for _, st := range s.Steps {
		if g := argVal(st.Args, "group", ""); g != "" {
			groups[g] = true
		}
		for _, g := range argList(st.Args, "groups") {
			groups[g] = true
		}
	}
	c, err := dial(ctx, r.t.Addr)
	if err != nil {
		return err
	}
	defer c.close()
	deadline := time.Now().Add(r.opt.Wait)
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		for {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version = 8
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = tn.Group(g)
			req.Groups = append(req.Groups, rg)
			resp, err := c.do(req, "groupquake-warmup", deadline)
			if err != nil {
				return fmt.Errorf("warm up the coordinator of %s: %v", rg.Group, err)
			}
			code := resp.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode
			e := kerr.ErrorForCode(code)
			if !errors.Is(e, kerr.CoordinatorLoadInProgress) && !errors.Is(e, kerr.CoordinatorNotAvailable) && !errors.Is(e, kerr.NotCoordinator) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the coordinator of %s still answers %v after %v", rg.Group, e, r.opt.Wait)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func usesShareProtocol(s Section) bool {
	return slices.ContainsFunc(s.Steps, func(st Step) bool { return st.Cmd == "share-group-heartbeat" })
}

func usesConsumerProtocol(s Section) bool {
	return slices.ContainsFunc(s.Steps, func(st Step) bool {
		return st.Cmd == "consumer-group-heartbeat" || st.Cmd == "cg-heartbeat"
	})
}

// probeConsumerTopics waits until the target's group coordinator assigns
// the section's topics: a broker's group coordinator reads topics from its
// own metadata image, which can lag the metadata cache createTopics waited
// for, and a heartbeat before then gets an empty assignment the reference
// never gives. The probe member joins a group outside the section's
// namespace and leaves again.
func (r *runner) probeConsumerTopics(ctx context.Context, tn *targetNames, img image) error {
	if len(img) == 0 {
		return nil
	}
	c, err := dial(ctx, r.t.Addr)
	if err != nil {
		return err
	}
	defer c.close()
	var topics []string
	for _, name := range slices.Sorted(maps.Keys(img)) {
		topics = append(topics, tn.Topic(name))
	}
	group := "probe-" + tn.ns
	deadline := time.Now().Add(r.opt.Wait)
	for i := 0; ; i++ {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group = group
		req.MemberID = fmt.Sprintf("probe-%d", i)
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := c.do(req, "groupquake-probe", deadline)
		if err != nil {
			return fmt.Errorf("probe the consumer-group coordinator: %v", err)
		}
		hb := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		assigned := hb.ErrorCode == 0 && hb.Assignment != nil && len(hb.Assignment.Topics) == len(topics)
		leave := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, group, req.MemberID, -1
		if _, err := c.do(leave, "groupquake-probe", deadline); err != nil {
			return fmt.Errorf("probe member leaves: %v", err)
		}
		if assigned {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v %s's group coordinator still assigns none of %v (last answer: %s)", r.opt.Wait, r.t.Name, topics, format(hb, vectors.Identity{}))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// apiVersions asks the target which request versions it serves.
func apiVersions(ctx context.Context, addr string, wait time.Duration) (map[int16][2]int16, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "groupquake", "0"
	resp, err := c.do(req, "groupquake-differential", time.Now().Add(wait))
	if err != nil {
		return nil, fmt.Errorf("ApiVersions: %v", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions: %v", kerr.ErrorForCode(av.ErrorCode))
	}
	out := map[int16][2]int16{}
	for _, k := range av.ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out, nil
}
