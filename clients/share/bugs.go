package share

import "fmt"

// Bug is a deliberate defect, for proving that the share checkers catch
// what they claim to (suites/bite); the zero value is a correct member.
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
func WithBug(b Bug) Opt { return opt(func(c *cfg) { c.bug = b }) }

func (b Bug) check() error {
	switch b {
	case "", BugAckAfterLock, BugAckNotAcquired, BugIgnoreDeliveryCount:
		return nil
	}
	return fmt.Errorf("unknown bug %q: one of %q, %q, %q", string(b), BugAckAfterLock, BugAckNotAcquired, BugIgnoreDeliveryCount)
}

// bugNotAcquiredStretch is how far BugAckNotAcquired stretches an accept.
const bugNotAcquiredStretch = 3
