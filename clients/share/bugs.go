package share

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/groupquake/groupquake/clients"
)

// Bug is a deliberate defect, for proving that the share checkers catch
// what they claim to (suites/bite); the zero value is a correct member.
//
// Every bug lives in this file. The member reaches it only at named seams,
// each a no-op for the zero Bug: holdPastLock before records are accepted,
// stretch and hidesAckErrors where acknowledgements are sent and answered,
// deliveryCount where acquisitions are read.
type Bug string

const (
	// BugAckAfterLock holds every record past its acquisition lock before
	// accepting it, and reports the broker's refusal (INVALID_RECORD_STATE)
	// as an accepted acknowledgement: the record comes back to another
	// member after the broker "acknowledged" it (ShareAckedNotRedelivered).
	BugAckAfterLock Bug = "ack-after-lock"
	// BugAckNotAcquired stretches every accept to offsets past what it
	// acquired and reports the whole range acknowledged
	// (ShareAcksOnlyAcquired).
	BugAckNotAcquired Bug = "ack-not-acquired"
	// BugIgnoreDeliveryCount never reads a fetch's delivery counts and
	// reports every acquisition as a first delivery
	// (ShareDeliveryCountBounded: a redelivered record's count falls).
	BugIgnoreDeliveryCount Bug = "ignore-delivery-count"
)

// WithBug makes the member carry b.
func WithBug(b Bug) Opt { return opt{func(c *cfg) { c.bug = b }} }

func (b Bug) check() error {
	switch b {
	case "", BugAckAfterLock, BugAckNotAcquired, BugIgnoreDeliveryCount:
		return nil
	}
	return fmt.Errorf("unknown bug %q: one of %q, %q, %q", string(b), BugAckAfterLock, BugAckNotAcquired, BugIgnoreDeliveryCount)
}

// bugNotAcquiredStretch is how far BugAckNotAcquired stretches an accept.
const bugNotAcquiredStretch = 3

// stretch is BugAckNotAcquired: every accept reaches past what was
// acquired.
func (m *Member) stretch(acks []clients.ShareAck) []clients.ShareAck {
	if m.cfg.bug != BugAckNotAcquired {
		return acks
	}
	out := slices.Clone(acks)
	for i := range out {
		if out[i].Type == clients.AckAccept && (i+1 == len(out) || out[i+1].Topic != out[i].Topic || out[i+1].Partition != out[i].Partition) {
			out[i].Last += bugNotAcquiredStretch
		}
	}
	return out
}

// hidesAckErrors: the bugs that report a refused acknowledgement as done.
func (m *Member) hidesAckErrors() bool {
	return m.cfg.bug == BugAckAfterLock || m.cfg.bug == BugAckNotAcquired
}

// holdPastLock (BugAckAfterLock) waits, before recs are accepted, until
// every one's acquisition lock has lapsed (a second past the latest
// deadline). mu is held; it is released while waiting.
func (m *Member) holdPastLock(ctx context.Context, recs []Record) {
	if m.cfg.bug != BugAckAfterLock {
		return
	}
	var last time.Time
	for _, r := range recs {
		if r.Deadline.After(last) {
			last = r.Deadline
		}
	}
	if last.IsZero() {
		return
	}
	m.mu.Unlock()
	m.sleep(ctx, last.Sub(m.cfg.now())+time.Second)
	m.mu.Lock()
}

// deliveryCount is the delivery count of an acquisition as the member
// reads it: BugIgnoreDeliveryCount takes every delivery for the first.
func (m *Member) deliveryCount(count int16) int16 {
	if m.cfg.bug == BugIgnoreDeliveryCount {
		return 1
	}
	return count
}
