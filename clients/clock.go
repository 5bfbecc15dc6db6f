package clients

import "time"

// Clock is a member's source of time, the one clock every member package
// takes (WithClock): Now stamps events and measures the member's timers,
// After is how a member waits on one. A member that waits on real timers
// only reads Now.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// WallClock is the real clock: time.Now and time.After. It is every
// member's default.
type WallClock struct{}

// Now is time.Now.
func (WallClock) Now() time.Time { return time.Now() }

// After is time.After.
func (WallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// ClockFunc reads the time from a function (a run's clock, whose readings
// may be shifted) and waits on real timers: it changes what a member
// measures, not how fast it runs. A nil ClockFunc is the wall clock.
type ClockFunc func() time.Time

// Now calls f, or time.Now when f is nil.
func (f ClockFunc) Now() time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}

// After waits on the real clock.
func (ClockFunc) After(d time.Duration) <-chan time.Time { return time.After(d) }
