package share

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/internal/option"
)

// Opt configures a Member.
type Opt = option.Opt[cfg]

type cfg struct {
	option.Common
	topics         []string
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
func KgoOpts(o ...kgo.Opt) Opt {
	return option.New(func(c *cfg) { c.KgoOpts = append(c.KgoOpts, o...) })
}

// Topics are the topics the member subscribes to.
func Topics(t ...string) Opt { return option.New(func(c *cfg) { c.topics = append(c.topics, t...) }) }

// WithHooks receives the member's events.
func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }

// WithClock stamps the member's events (the run's clock). Default: the
// wall clock.
func WithClock(cl clients.Clock) Opt { return option.New(func(c *cfg) { c.Clock = cl }) }

// Explicit makes the application acknowledge every record itself
// (Acknowledge); without it the member works as the Java consumer's
// implicit mode: the records a Poll handed out and the application did not
// acknowledge are accepted by the next Poll (or by Close).
func Explicit() Opt { return option.New(func(c *cfg) { c.explicit = true }) }

// Renew says the brokers serve the RENEW acknowledgement (ShareFetch and
// ShareAcknowledge v2, version.Profile.ShareFetchV2, 4.2+).
func Renew(on bool) Opt { return option.New(func(c *cfg) { c.renew = on }) }

// MaxRecords is ShareFetch's MaxRecords (default 50).
func MaxRecords(n int32) Opt { return option.New(func(c *cfg) { c.maxRecords = n }) }

// MaxWait is ShareFetch's MaxWaitMs (default 500 ms).
func MaxWait(d time.Duration) Opt { return option.New(func(c *cfg) { c.maxWait = d }) }

// RequestTimeout bounds each request (default 5 s): a request without an
// answer by then is reported as having no answer.
func RequestTimeout(d time.Duration) Opt { return option.New(func(c *cfg) { c.requestTimeout = d }) }

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
	c.Defaults()
	c.now = c.Clock.Now
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
