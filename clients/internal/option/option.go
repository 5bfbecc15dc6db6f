// Package option is the one option shape of the member packages under
// clients/, franz-go's (kgo.Opt): an interface with one unexported method,
// implemented by a struct that holds the function. A member package
// declares its options on it,
//
//	type Opt = option.Opt[cfg]
//
//	func WithHooks(h clients.Hooks) Opt { return option.New(func(c *cfg) { c.Hooks = h }) }
//
// embeds Common (the settings every member takes) in its cfg, and applies
// the options once, in its New, with Apply. clients/options_shape_test.go
// holds every member package to this shape.
package option

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/clients"
)

// Opt configures a member whose configuration is a C.
type Opt[C any] interface{ apply(*C) }

type opt[C any] struct{ fn func(*C) }

func (o opt[C]) apply(c *C) { o.fn(c) }

// New is the option that runs fn on the configuration.
func New[C any](fn func(*C)) Opt[C] { return opt[C]{fn} }

// Apply runs opts on c in order: a later option overrides an earlier one.
func Apply[C any](c *C, opts ...Opt[C]) {
	for _, o := range opts {
		o.apply(c)
	}
}

// Common is what the options of every member package set alike: who
// receives the member's events (WithHooks), the clock it reads
// (WithClock) and its links as kgo options (KgoOpts). A member package's
// cfg embeds it.
type Common struct {
	Hooks   clients.Hooks
	Clock   clients.Clock
	KgoOpts []kgo.Opt
}

// Defaults fills what the options left unset: hooks that drop every event
// and the wall clock (clients.WallClock).
func (c *Common) Defaults() {
	if c.Hooks == nil {
		c.Hooks = clients.HookFunc(func(clients.Event) {})
	}
	if c.Clock == nil {
		c.Clock = clients.WallClock{}
	}
}
