package consumergroup

import (
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/groupquake/groupquake/coordinator/assignor"
	"github.com/groupquake/groupquake/coordinator/records"
	"github.com/groupquake/groupquake/coordinator/version"
)

// Regular-expression subscriptions (KIP-848 SubscribedTopicRegex), as
// GroupMetadataManager keeps them:
//
//  1. A member's regex is only stored in its metadata; the group resolves
//     every regex its members use, once for all of them, and persists each
//     result as a ConsumerGroupRegularExpression record (type 16: the sorted
//     topics, the metadata image version and the time of the resolution).
//     Only replay changes what the group holds, so a log replays to the
//     same regexes.
//  2. Resolution is asynchronous: a heartbeat only schedules it (one task
//     per group, "<group>-regex"), and the result comes back as a write of
//     its own, which bumps the group epoch when the topics changed. Here the
//     task runs on the next Tick at or after the heartbeat, which every host
//     calls right after the request (the vectors' tick, the wire server).
//  3. A group resolves at most once per 10 s, and only when a regex is not
//     resolved yet, a topic was created since, or (4.1+) the refresh
//     interval passed.
//  4. The group's subscribed topic names are the members' names plus the
//     topics of every resolved regex; a member's subscription is its names
//     plus the topics of its own regex, for the assignor and for the
//     reconciliation alike. An unresolved regex matches nothing.
//
// Kafka compiles the regexes with Google's RE2/J (com.google.re2j.Pattern)
// and matches whole topic names (Matcher.matches). Go's regexp is the same
// RE2 syntax; where the two differ, checkRE2J answers what Kafka answers or
// refuses the pattern as not modelled.

// regexBatchRefreshMinInterval is GMM.REGEX_BATCH_REFRESH_MIN_INTERVAL_MS.
const regexBatchRefreshMinInterval = 10 * time.Second

// resolvedRegex is ResolvedRegularExpression: what a
// ConsumerGroupRegularExpressionValue holds.
type resolvedRegex struct {
	// topics is sorted (GCRH.newConsumerGroupRegularExpressionRecord sorts
	// them; replay keeps a set).
	topics    []string
	version   int64
	timestamp int64
}

// subCount is SubscriptionCount: how many members subscribe to a topic by
// name, and how many resolved regexes of the group match it.
type subCount struct{ byName, byRegex int }

// regexTask is the resolution GMM schedules under "<group>-regex"
// (executor.schedule in maybeUpdateRegularExpressions).
type regexTask struct {
	member  string
	regexes []string
	at      time.Time
}

type regexStatus int8

// UpdateRegularExpressionStatus.
const (
	regexNoChange regexStatus = iota
	regexUpdated
	regexUpdatedAndResolved
)

// subscribedRegexes is ConsumerGroup.subscribedRegularExpressions: regex →
// number of members subscribed to it, as ConsumerGroup.updateMember keeps
// it (a copy of the group's counts).
func (g *group) subscribedRegexes() map[string]int {
	return maps.Clone(g.regexCounts)
}

// numSubscribedMembers is ConsumerGroup.numSubscribedMembers.
func (g *group) numSubscribedMembers(regex string) int {
	if regex != "" {
		return g.regexCounts[regex]
	}
	n := 0
	for _, mb := range g.members {
		if mb.regex == regex {
			n++
		}
	}
	return n
}

// firstResolved is the entry ConsumerGroup.lastResolvedRegularExpression*
// read: "the first entry as a proxy for all of them", which are resolved
// together. Java HashMap order of the regexes stands in for the
// TimelineHashMap's.
func (g *group) firstResolved() (resolvedRegex, bool) {
	if len(g.resolved) == 0 {
		return resolvedRegex{}, false
	}
	return g.resolved[assignor.JavaHashMapOrder(keys(g.resolved))[0]], true
}

// memberTopics is the subscription the assignor and the reconciliation see
// (ConsumerTargetAssignmentBuilder.createMemberSubscriptionAndAssignment,
// CurrentAssignmentBuilder.subscribedTopicIds): the member's names, then
// the topics of its resolved regex not already named (UnionSet), each part
// in Java HashSet order.
func (g *group) memberTopics(mb *member) []string {
	out := assignor.JavaHashMapOrder(mb.subscribed)
	if mb.regex == "" {
		return out
	}
	r, ok := g.resolved[mb.regex]
	if !ok {
		return out // an unresolved regex matches nothing
	}
	for _, t := range assignor.JavaHashMapOrder(r.topics) {
		if !slices.Contains(mb.subscribed, t) {
			out = append(out, t)
		}
	}
	return out
}

// subscribedTopicNames is ConsumerGroup.computeSubscribedTopicNames(old,
// updated): the members' names, minus old's plus updated's, and the topics
// of every resolved regex, without those of old's regex when old was its
// last member and updated does not keep it. Either may be nil.
func (g *group) subscribedTopicNames(old, updated *member) map[string]subCount {
	counts := map[string]subCount{}
	add := func(names []string, byName, byRegex int) {
		for _, n := range names {
			c := counts[n]
			c.byName += byName
			c.byRegex += byRegex
			if c.byName <= 0 && c.byRegex <= 0 {
				delete(counts, n)
			} else {
				counts[n] = c
			}
		}
	}
	for n, c := range g.nameCounts {
		counts[n] = subCount{byName: c}
	}
	if old != nil {
		add(old.subscribed, -1, 0)
	}
	if updated != nil {
		add(updated.subscribed, 1, 0)
	}
	for _, r := range g.resolved {
		add(r.topics, 0, 1)
	}
	if old != nil && old.regex != "" && (updated == nil || updated.regex != old.regex) && g.numSubscribedMembers(old.regex) == 1 {
		if r, ok := g.resolved[old.regex]; ok {
			add(r.topics, 0, -1)
		}
	}
	return counts
}

// subscribedRegexesWith is ConsumerGroup.computeSubscribedRegularExpressions.
func (g *group) subscribedRegexesWith(old, updated *member) map[string]int {
	out := g.subscribedRegexes()
	if old != nil && updated != nil && old.regex == updated.regex {
		return out
	}
	if old != nil && old.regex != "" {
		if out[old.regex]--; out[old.regex] <= 0 {
			delete(out, old.regex)
		}
	}
	if updated != nil && updated.regex != "" {
		out[updated.regex]++
	}
	return out
}

// subscriptionType is ConsumerGroup.subscriptionType: homogeneous when
// every member names every subscribed topic, or when all members use one
// regex and no topic is named or matched twice.
func subscriptionType(regexes map[string]int, counts map[string]subCount, numMembers int) assignor.SubscriptionType {
	if len(regexes) == 0 {
		for _, c := range counts {
			if c.byName != numMembers {
				return assignor.Heterogeneous
			}
		}
		return assignor.Homogeneous
	}
	// regexes.values().iterator().next()
	if regexes[assignor.JavaHashMapOrder(keys(regexes))[0]] != numMembers {
		return assignor.Heterogeneous
	}
	for _, c := range counts {
		if c.byRegex != 1 || c.byName > 0 {
			return assignor.Heterogeneous
		}
	}
	return assignor.Homogeneous
}

// maybeUpdateRegex is GMM.maybeUpdateRegularExpressions: the tombstone of
// the member's old regex when it was the last to use it, the validation of
// a regex new to the group, and the scheduling of a resolution (run once
// the heartbeat succeeded). The status says whether the subscription
// changed and whether the group epoch must move now (the new regex is
// already resolved, or, KAFKA-19891, the member dropped its regex).
func (hb *heartbeat) maybeUpdateRegex(g *group, mb, updated *member) (regexStatus, error) {
	m := hb.m
	old, neu := mb.regex, updated.regex
	status := regexNoChange
	requireRefresh := false
	if old != neu {
		status = regexUpdated
		if old != "" && g.numSubscribedMembers(old) == 1 {
			hb.recs = append(hb.recs, tombstone(records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: old}))
		}
		switch {
		case neu != "" && g.numSubscribedMembers(neu) == 0:
			// Utils.throwIfRegularExpressionIsInvalid, then resolve it.
			if desc, _ := checkRE2J(m.profile, neu); desc != "" {
				return 0, errorf(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %s.", neu, desc)
			}
			requireRefresh = true
		case neu != "":
			if _, ok := g.resolved[neu]; ok {
				status = regexUpdatedAndResolved
			}
		case m.profile.RegexDropBumpsEpoch:
			status = regexUpdatedAndResolved
		}
	}

	// 0. The group uses regexes (or the member just brought one).
	if !requireRefresh && len(g.subscribedRegexes()) == 0 {
		return status, nil
	}
	// 1. No resolution is under way.
	if _, busy := m.regexTasks[g.id]; busy {
		return status, nil
	}
	// 2. The last one is older than 10 s (Long.MIN_VALUE without any).
	nowMs := hb.now.UnixMilli()
	last, resolved := g.firstResolved()
	if resolved && nowMs <= last.timestamp+regexBatchRefreshMinInterval.Milliseconds() {
		return status, nil
	}
	subs := g.subscribedRegexesWith(mb, updated)
	// 3.1 A regex is not resolved yet.
	requireRefresh = requireRefresh || len(subs) != len(g.resolved)
	// 3.2 Topics were created since (lastResolvedRegularExpressionVersion
	// is 0 without any).
	requireRefresh = requireRefresh || last.version < m.newTopicsVersion
	// 3.3 (4.1+) The refresh interval passed.
	if m.profile.RegexPeriodicRefresh {
		requireRefresh = requireRefresh || !resolved || nowMs > last.timestamp+m.cfg.RegexRefreshInterval.Milliseconds()
	}
	if requireRefresh && len(subs) > 0 {
		task := regexTask{member: updated.id, regexes: keys(subs), at: hb.now}
		groupID := g.id
		hb.after = append(hb.after, func() { m.regexTasks[groupID] = task })
	}
	return status, nil
}

// runRegexTask is the executor task (TopicRegexResolver.resolveRegularExpressions
// against the current image) and GMM.handleRegularExpressionsResult: one
// record per regex the group still uses, then, when a regex's topics or the
// subscribed topics' metadata changed, the group epoch bump. The records are
// replayed before they are returned.
func (m *Manager) runRegexTask(now time.Time, groupID string, task regexTask) []records.Record {
	g, ok := m.rp.groups[groupID]
	if !ok {
		return nil // the group is gone (GroupIdNotFoundException: nothing)
	}
	var names []string
	if l, ok := m.lastTopics.(TopicLister); ok {
		names = l.TopicNames()
	}
	version, nowMs := m.imageVersion(), now.UnixMilli()
	counts := g.subscribedTopicNames(nil, nil)
	adjust := func(topics []string, d int) {
		for _, t := range topics {
			c := counts[t]
			c.byRegex += d
			if c.byName <= 0 && c.byRegex <= 0 {
				delete(counts, t)
			} else {
				counts[t] = c
			}
		}
	}
	var recs []records.Record
	bump := false
	// The result is a HashMap keyed by regex.
	for _, re := range assignor.JavaHashMapOrder(task.regexes) {
		if g.numSubscribedMembers(re) == 0 {
			continue
		}
		next := resolvedRegex{topics: resolveRegex(m.profile, re, names), version: version, timestamp: nowMs}
		prev := g.resolved[re] // ResolvedRegularExpression.EMPTY when absent
		if !slices.Equal(prev.topics, next.topics) {
			bump = true
			adjust(prev.topics, -1)
			adjust(next.topics, +1)
		}
		recs = append(recs, m.regexRecord(groupID, re, next))
	}
	subscribed := keys(counts)
	var hash int64
	if m.profile.WritesPartitionMetadata {
		meta := m.subscriptionMetadata(m.lastTopics, subscribed)
		if !maps.Equal(meta, g.subscriptionMetadata) {
			bump = true
			recs = append(recs, m.partitionMetadataRecord(groupID, meta))
		}
	} else {
		hash = m.metadataHash(m.lastTopics, subscribed)
		if hash != g.metadataHash {
			bump = true
		}
	}
	if bump {
		recs = append(recs, m.epochRecord(groupID, g.epoch+1, hash))
	}
	if len(recs) == 0 {
		return nil
	}
	if err := m.applyAll(groupID, recs); err != nil {
		panic("consumergroup: replaying our own regex records failed: " + err.Error())
	}
	if bump {
		// group.setMetadataRefreshDeadline(now + METADATA_REFRESH_INTERVAL_MS, epoch)
		m.markRefreshed(groupID)
	}
	return recs
}

// runRegexTasks runs every resolution scheduled at or before now, by group.
func (m *Manager) runRegexTasks(now time.Time) []records.Record {
	var due []string
	for id, t := range m.regexTasks {
		if !t.at.After(now) {
			due = append(due, id)
		}
	}
	slices.Sort(due)
	var out []records.Record
	for _, id := range due {
		task := m.regexTasks[id]
		delete(m.regexTasks, id)
		out = append(out, m.runRegexTask(now, id, task)...)
	}
	return out
}

// regexRecord is GCRH.newConsumerGroupRegularExpressionRecord.
func (m *Manager) regexRecord(groupID, regex string, r resolvedRegex) records.Record {
	return m.shape(records.Record{
		Key:   records.ConsumerGroupRegularExpressionKey{GroupID: groupID, RegularExpression: regex},
		Value: &records.ConsumerGroupRegularExpressionValue{Topics: slices.Clone(r.topics), Version: r.version, Timestamp: r.timestamp},
	})
}

// regexTombstones are the tombstones of every resolved regex of g, as
// ConsumerGroup.createGroupTombstoneRecords writes them.
func (g *group) regexTombstones() []records.Record {
	var out []records.Record
	for _, re := range assignor.JavaHashMapOrder(keys(g.resolved)) {
		out = append(out, tombstone(records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: re}))
	}
	return out
}

// deleteResolvedRegexes is GMM.maybeDeleteResolvedRegularExpressions: the
// tombstone of every regex whose members are all fenced, resolved or not.
func (g *group) deleteResolvedRegexes(fenced []*member) ([]records.Record, map[string]bool) {
	counts := map[string]int{}
	for _, mb := range fenced {
		if mb.regex != "" {
			counts[mb.regex]++
		}
	}
	var recs []records.Record
	deleted := map[string]bool{}
	for _, re := range assignor.JavaHashMapOrder(keys(counts)) {
		if g.numSubscribedMembers(re) == counts[re] {
			recs = append(recs, tombstone(records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: re}))
			deleted[re] = true
		}
	}
	return recs, deleted
}

// --- the metadata image version ---

// observeTopics stands in for GMM.onMetadataUpdate's bookkeeping: Kafka's
// image version is the offset of the KRaft metadata log, which the model
// does not have. The Manager counts a new version whenever the topic names
// it is given change, never below the version of any regex record it
// replayed, and remembers the last version that created topics
// (lastMetadataImageWithNewTopics). The first image after a start counts as
// new, as Kafka's first image is newer than anything its log holds.
func (m *Manager) observeTopics(t TopicMetadata) {
	l, ok := t.(TopicLister)
	if !ok {
		return
	}
	names := l.TopicNames()
	if m.knownTopics != nil && len(names) == len(m.knownTopics) {
		same := true
		for _, n := range names {
			if !m.knownTopics[n] {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	created := m.knownTopics == nil
	next := make(map[string]bool, len(names))
	for _, n := range names {
		next[n] = true
		if !m.knownTopics[n] {
			created = true
		}
	}
	m.knownTopics = next
	m.version = m.imageVersion() + 1
	if created {
		m.newTopicsVersion = m.version
	}
}

// imageVersion is the version a resolution now records.
func (m *Manager) imageVersion() int64 { return max(m.version, m.rp.regexVersion) }

// --- RE2/J compatibility ---

// checkRE2J says how Kafka's Pattern.compile (com.google.re2j, the release
// of p.RE2J) takes pattern. desc is the PatternSyntaxException description
// Kafka reports ("missing closing ]"), "" when the pattern compiles.
// unsupported, when set, says why the model cannot vouch for resolving it
// as Kafka does; the heartbeat refuses such patterns.
//
// Where Go's regexp/syntax (Perl flags) and RE2/J 1.7/1.8 differ:
//   - an unmatched ")" is "unexpected )" in Go and "regexp/syntax: internal
//     error" in RE2/J (Parser.parseRightParen finds the stack too short;
//     Kafka 4.1.2 and 4.4.0 answered so to `foo)` in the differential run);
//   - a capture name used twice is accepted by Go and refused by RE2/J
//     ("duplicate capture group name");
//   - (?<name>expr) is refused by RE2/J 1.7 (Kafka 4.0) as "invalid or
//     unsupported Perl syntax"; RE2/J 1.8 and Go accept it;
//   - \p{…} and \P{…} classes read Unicode tables of different releases;
//     they are refused as not modelled (topic names are ASCII: spell the
//     class out);
//   - Go's limits on nesting depth and program size, and its UTF-8 check,
//     have no RE2/J counterpart; patterns hitting them are not modelled.
//
// When a pattern has several errors RE2/J and Go may name different ones
// first; the model names Go's.
func checkRE2J(p version.Profile, pattern string) (desc, unsupported string) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		var code syntax.ErrorCode
		if se, ok := err.(*syntax.Error); ok {
			code = se.Code
		}
		switch code {
		case syntax.ErrUnexpectedParen:
			return "regexp/syntax: internal error", ""
		case syntax.ErrNestingDepth, syntax.ErrLarge, syntax.ErrInvalidUTF8, syntax.ErrInternalError, "":
			return "", fmt.Sprintf("Go's regexp refuses it (%v), RE2/J has no such limit", err)
		}
		return string(code), ""
	}
	sc := scanRegex(pattern)
	if sc.angleGroup && p.RE2J == "1.7" {
		return "invalid or unsupported Perl syntax", ""
	}
	if dupCaptureName(re, map[string]bool{}) {
		return "duplicate capture group name", ""
	}
	if sc.unicodeClass {
		return "", fmt.Sprintf("\\p and \\P classes use the Unicode tables of RE2/J %s in Kafka and of Go here, which differ; spell the class out", p.RE2J)
	}
	return "", ""
}

func dupCaptureName(re *syntax.Regexp, seen map[string]bool) bool {
	if re.Op == syntax.OpCapture && re.Name != "" {
		if seen[re.Name] {
			return true
		}
		seen[re.Name] = true
	}
	for _, s := range re.Sub {
		if dupCaptureName(s, seen) {
			return true
		}
	}
	return false
}

type regexScan struct {
	unicodeClass bool // \p or \P
	angleGroup   bool // (?<name>
	openQuote    bool // ends inside \Q… without \E
}

// scanRegex reads the escapes and groups of a pattern Go parsed: \Q…\E
// quotes (outside classes), character classes (a leading ] is literal,
// [:name:] is a POSIX class), and backslash escapes.
func scanRegex(s string) regexScan {
	var r regexScan
	inQ, inClass := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inQ {
			if c == '\\' && i+1 < len(s) && s[i+1] == 'E' {
				inQ = false
				i++
			}
			continue
		}
		switch {
		case c == '\\' && i+1 < len(s):
			switch s[i+1] {
			case 'Q':
				if !inClass {
					inQ = true
				}
			case 'p', 'P':
				r.unicodeClass = true
			}
			i++
		case inClass && strings.HasPrefix(s[i:], "[:"):
			if k := strings.Index(s[i+2:], ":]"); k >= 0 {
				i += 2 + k + 1
			}
		case c == '[' && !inClass:
			inClass = true
			j := i + 1
			if j < len(s) && s[j] == '^' {
				j++
			}
			if j < len(s) && s[j] == ']' {
				j++
			}
			i = j - 1
		case c == ']' && inClass:
			inClass = false
		case c == '(' && !inClass && strings.HasPrefix(s[i:], "(?<"):
			r.angleGroup = true
		}
	}
	r.openQuote = inQ
	return r
}

// resolveRegex is the match of one regex against the image's topic names
// (Pattern.matcher(topic).matches(): the whole name), sorted. A pattern
// that does not compile matches nothing (Kafka logs it and ignores it).
func resolveRegex(p version.Profile, pattern string, names []string) []string {
	out := []string{}
	if desc, _ := checkRE2J(p, pattern); desc != "" {
		return out
	}
	quoted := pattern
	if scanRegex(pattern).openQuote {
		quoted += `\E`
	}
	re, err := regexp.Compile(`\A(?:` + quoted + `)\z`)
	if err != nil {
		return out
	}
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
