package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// errHelp is returned once a command printed the help that -h asked for:
// the command line then exits 0, as `go CMD -h` style tools do for a
// requested help.
var errHelp = errors.New("help requested")

// newFlagSet returns the flag set of the command name ("image build"), whose
// usage is text followed by the flags.
func newFlagSet(name, text string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), text)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseArgs parses args with fs and returns the positional arguments.
// Flags may follow them (groupquake check DIR --json); "--" ends the flags.
// -h and --help print the usage on stdout and return errHelp; a flag error
// is one line, an exitBadInput error that points at -h.
func parseArgs(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard) // the flag package's own messages: one line is ours to write
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return nil, errHelp
		}
		if err != nil {
			return nil, badInput("%s: %v (see 'groupquake %s -h')", fs.Name(), err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, refuseEmpty(fs)
		}
		if consumed := args[:len(args)-len(rest)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(pos, rest...), refuseEmpty(fs)
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// refuseEmpty refuses a text flag the command line gave an empty value
// (--kinds "", --out=): every text flag's default is what leaving it out
// gives, so an empty value is a mistake (an unset shell variable), never a
// way to ask for the default.
func refuseEmpty(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok && err == nil {
			if s, ok := g.Get().(string); ok && strings.TrimSpace(s) == "" {
				err = badInput("--%s is empty: give a value, or leave --%s out for its default (see 'groupquake %s -h')", f.Name, f.Name, fs.Name())
			}
		}
	})
	return err
}

// parseNone parses args with fs for a command that takes no positional
// argument, and refuses any.
func parseNone(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("%s takes no arguments, got %q (see 'groupquake %s -h')", fs.Name(), strings.Join(pos, " "), fs.Name())
	}
	return nil
}

// given reports which flags the command line set (as opposed to defaults).
func given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// parseWithConsole adds the level flags (-q, -v) to fs, parses args with
// it and returns the positional arguments and the console the levels ask
// for.
func parseWithConsole(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) ([]string, *console, error) {
	var lv levelFlags
	lv.register(fs)
	pos, err := parseArgs(fs, args, stdout)
	if err != nil {
		return nil, nil, err
	}
	con, err := lv.console(stderr)
	if err != nil {
		return nil, nil, err
	}
	return pos, con, nil
}

// parseNoArgs is parseWithConsole for a command that takes no positional
// argument.
func parseNoArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (*console, error) {
	var lv levelFlags
	lv.register(fs)
	if err := parseNone(fs, args, stdout); err != nil {
		return nil, err
	}
	return lv.console(stderr)
}
