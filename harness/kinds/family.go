package kinds

import (
	"context"
	"maps"
	"slices"

	"github.com/groupquake/groupquake/clients/java"
)

// A Family is a set of member kinds that run only when --kinds names them:
// a seed never draws one (it draws from Default), because a machine may
// lack what they need (a JDK, python3 with confluent-kafka) or because
// they are meant to fail (the broken kinds). Each family is one file of
// this package that registers it in an init function; registering is all
// a new family needs for `groupquake run` to know, document and add its
// kinds. Families are kept in the order of their files' names.
type Family struct {
	// Help says what the kinds are and what they need, for --kinds' help
	// ("the Sarama and kafka-go kinds (docs/clients.md)"); the kinds'
	// names follow it.
	Help string
	// Names lists the kinds, in the order the help names them.
	Names []string
	// Registry returns the kinds. Before Prepare, a factory's Protocol,
	// Doc, Offers and ResendsCommits hold, but its New may fail.
	Registry func() Registry
	// Prepare returns the kinds of want (some of Names) ready to run, or
	// an error naming them and saying what the machine lacks. Nil when
	// Registry's factories run as they are.
	Prepare func(ctx context.Context, want []string, env Env) (Registry, error)
}

// Env is what preparing a family may need from the command line.
type Env struct {
	// Toolchain prepares the JVM members (kafka-clients resolved, drivers
	// compiled); nil makes one that logs nothing.
	Toolchain *java.Toolchain
	// KafkaClients is the plan's kafka-clients version (--kafka-clients,
	// else the cluster's Kafka version).
	KafkaClients string
}

func (e Env) toolchain() *java.Toolchain {
	if e.Toolchain == nil {
		return &java.Toolchain{}
	}
	return e.Toolchain
}

// families are the registered families, in registration order.
var families []Family

// register adds f to the families; each family's file calls it from init.
func register(f Family) {
	families = append(families, f)
}

// Families lists the families of kinds that run only when named.
func Families() []Family { return slices.Clone(families) }

// All returns every kind a command line may name: Default's and every
// family's, unprepared (see Family.Registry).
func All() Registry {
	out := Default()
	for _, f := range families {
		maps.Copy(out, f.Registry())
	}
	return out
}

// Known lists every kind a command line may name, sorted.
func Known() []string { return All().Names() }

// WithNamed returns r plus the kinds of every family that named names,
// each family's prepared by its Prepare with env. Naming none changes
// nothing; a family that cannot run on this machine is an error naming
// its kinds.
func (r Registry) WithNamed(ctx context.Context, named []string, env Env) (Registry, error) {
	out := r
	for _, f := range families {
		var err error
		if out, err = out.withFamily(ctx, f, named, env); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// withFamily returns r plus the kinds of f among named.
func (r Registry) withFamily(ctx context.Context, f Family, named []string, env Env) (Registry, error) {
	want := namedKinds(named, func(k string) bool { return slices.Contains(f.Names, k) })
	if len(want) == 0 {
		return r, nil
	}
	reg := f.Registry()
	if f.Prepare != nil {
		var err error
		if reg, err = f.Prepare(ctx, want, env); err != nil {
			return nil, err
		}
	}
	out := maps.Clone(r)
	for _, n := range want {
		out[n] = reg[n]
	}
	return out, nil
}

// namedKinds are the kinds of named that is says are of its kind, each
// once, in the order named.
func namedKinds(named []string, is func(string) bool) []string {
	var want []string
	for _, n := range named {
		if is(n) && !slices.Contains(want, n) {
			want = append(want, n)
		}
	}
	return want
}
