package share

import (
	"fmt"
	"slices"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// Bug is a deliberate defect, for proving that the share checkers catch
// what they claim to (suites/bite); the zero value is a correct member.
//
// Every bug lives in this file. The member reaches it only at named seams,
// each a no-op for the zero Bug: onWire where a ShareFetch carries
// acknowledgements, stretch and hidesAckErrors where acknowledgements are
// sent and answered,
// deliveryCount where acquisitions are read.
type Bug string

const (
	// BugAckNotSent leaves every accept out of the ShareFetch requests that
	// should carry it, and reports it sent and acknowledged: the broker still
	// holds the record under the member's lock and delivers it again when
	// the lock lapses, after the "acknowledged" accept
	// (ShareAckedNotRedelivered).
	BugAckNotSent Bug = "ack-not-sent"
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
func WithBug(b Bug) Opt { return option.New(func(c *cfg) { c.bug = b }) }

func (b Bug) check() error {
	switch b {
	case "", BugAckNotSent, BugAckNotAcquired, BugIgnoreDeliveryCount:
		return nil
	}
	return fmt.Errorf("unknown bug %q: one of %q, %q, %q", string(b), BugAckNotSent, BugAckNotAcquired, BugIgnoreDeliveryCount)
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
	return m.cfg.bug == BugAckNotAcquired
}

// onWire is what of acks a ShareFetch request carries: BugAckNotSent
// leaves the accepts out (the call reported still has them).
func (m *Member) onWire(acks []clients.ShareAck) []clients.ShareAck {
	if m.cfg.bug != BugAckNotSent {
		return acks
	}
	return slices.DeleteFunc(slices.Clone(acks), func(a clients.ShareAck) bool { return a.Type == clients.AckAccept })
}

// deliveryCount is the delivery count of an acquisition as the member
// reads it: BugIgnoreDeliveryCount takes every delivery for the first.
func (m *Member) deliveryCount(count int16) int16 {
	if m.cfg.bug == BugIgnoreDeliveryCount {
		return 1
	}
	return count
}
