package consumergroup

import (
	"fmt"
	"maps"
)

// CheckIndexes checks what the Manager keeps up to date change by change
// against what it is kept for: each group's counts of subscribed names,
// regexes and server assignors against its members, its member order
// against its members, its kept state against its members and epochs, and
// the timer queue against the armed timers (every
// armed timer has its live entry).
func (m *Manager) CheckIndexes() error {
	for id, g := range m.rp.groups {
		names, regexes, asked, classic := map[string]int{}, map[string]int{}, 0, 0
		for _, mb := range g.members {
			if mb.useClassicProtocol() {
				classic++
			}
			for _, n := range mb.subscribed {
				names[n]++
			}
			if mb.regex != "" {
				regexes[mb.regex]++
			}
			if mb.serverAssignor != "" {
				asked++
			}
		}
		if !maps.Equal(names, g.nameCounts) || !maps.Equal(regexes, g.regexCounts) || asked != g.askedAssignors || classic != g.classicMembers {
			return fmt.Errorf("group %s: counts names %v regexes %v assignors %d classic %d, its members have %v %v %d %d",
				id, g.nameCounts, g.regexCounts, g.askedAssignors, g.classicMembers, names, regexes, asked, classic)
		}
		seen := map[string]bool{}
		for _, mid := range g.order {
			if seen[mid] || g.members[mid] == nil {
				return fmt.Errorf("group %s: member order %v does not match its %d members", id, g.order, len(g.members))
			}
			seen[mid] = true
		}
		if len(seen) != len(g.members) {
			return fmt.Errorf("group %s: member order %v does not match its %d members", id, g.order, len(g.members))
		}
		if g.stateKnown != "" && g.stateKnown != g.computeState() {
			return fmt.Errorf("group %s: state %s kept, it is %s", id, g.stateKnown, g.computeState())
		}
		g.state() // kept from here, so the next check sees whether a change forgot it
		if g.undo != nil {
			return fmt.Errorf("group %s: journal left on after a write", id)
		}
	}
	queued := map[timerKey]bool{}
	for _, e := range m.queue {
		if m.live(e) {
			queued[e.k] = true
		}
	}
	for k, t := range m.timers {
		if !queued[k] {
			return fmt.Errorf("timer %v (deadline %v) is armed but not queued", k, t.deadline)
		}
	}
	return nil
}
