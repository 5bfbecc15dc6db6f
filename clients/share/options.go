package share

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

// Opt configures a Member.
type Opt interface{ apply(*cfg) }

type opt struct{ fn func(*cfg) }

func (o opt) apply(c *cfg) { o.fn(c) }

type cfg struct {
	kgoOpts        []kgo.Opt
	topics         []string
	hooks          clients.Hooks
	clock          clients.Clock
	now            func() time.Time // clock.Now
	explicit       bool
	renew          bool
	maxRecords     int32
	maxWait        time.Duration
	requestTimeout time.Duration
	bug            Bug
}

// KgoOpts are the options of the member's kgo client (seed brokers, the
// dialer of its links): every request goes through that client.
func KgoOpts(o ...kgo.Opt) Opt { return opt{func(c *cfg) { c.kgoOpts = append(c.kgoOpts, o...) }} }

// Topics are the topics the member subscribes to.
func Topics(t ...string) Opt { return opt{func(c *cfg) { c.topics = append(c.topics, t...) }} }

// WithHooks receives the member's events.
func WithHooks(h clients.Hooks) Opt { return opt{func(c *cfg) { c.hooks = h }} }

// WithClock stamps the member's events (the run's clock). Default: the
// wall clock.
func WithClock(cl clients.Clock) Opt { return opt{func(c *cfg) { c.clock = cl }} }

// Explicit makes the application acknowledge every record itself
// (Acknowledge); without it the member works as the Java consumer's
// implicit mode: the records a Poll handed out and the application did not
// acknowledge are accepted by the next Poll (or by Close).
func Explicit() Opt { return opt{func(c *cfg) { c.explicit = true }} }

// Renew says the brokers serve the RENEW acknowledgement (ShareFetch and
// ShareAcknowledge v2, version.Profile.ShareFetchV2, 4.2+).
func Renew(on bool) Opt { return opt{func(c *cfg) { c.renew = on }} }

// MaxRecords is ShareFetch's MaxRecords (default 50).
func MaxRecords(n int32) Opt { return opt{func(c *cfg) { c.maxRecords = n }} }

// MaxWait is ShareFetch's MaxWaitMs (default 500 ms).
func MaxWait(d time.Duration) Opt { return opt{func(c *cfg) { c.maxWait = d }} }

// RequestTimeout bounds each request (default 5 s): a request without an
// answer by then is reported as having no answer.
func RequestTimeout(d time.Duration) Opt { return opt{func(c *cfg) { c.requestTimeout = d }} }

func (c *cfg) validate() error {
	if c.maxRecords == 0 {
		c.maxRecords = 50
	}
	if c.maxWait == 0 {
		c.maxWait = 500 * time.Millisecond
	}
	if c.requestTimeout == 0 {
		c.requestTimeout = 5 * time.Second
	}
	if c.clock == nil {
		c.clock = clients.WallClock{}
	}
	c.now = c.clock.Now
	var errs []error
	if len(c.topics) == 0 {
		errs = append(errs, errors.New("no topics: a share member must subscribe to at least one (Topics)"))
	}
	if c.maxRecords < 0 || c.maxWait < 0 || c.requestTimeout < 0 {
		errs = append(errs, fmt.Errorf("negative MaxRecords %d, MaxWait %v or RequestTimeout %v", c.maxRecords, c.maxWait, c.requestTimeout))
	}
	if err := c.bug.check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
