// Package kinds holds groupquake's member kinds: the names a plan and
// --kinds use ("classic", "java-consumer", "sarama-range"), each with its
// Factory, which builds a member for harness/run from a MemberSpec.
//
// Default is the registry a seed draws from. Every other kind runs only
// when --kinds names it, and belongs to a Family (family.go): the broken
// kinds, the Go client kinds, the Java, Python and Spring kinds, the share
// kinds. A family is one file of this package that registers itself; the
// command line's --kinds help and its list of known kinds, the classic
// assignor check (CheckClassicMix) and the tests that hold every kind read
// the families, so a new client kind is one file here (a family, or an
// entry in an existing family's table) beside its member under clients/.
//
// The run engine (harness/run) imports this package; this package imports
// no part of the engine.
package kinds
