// Command versions prints the Kafka releases coordinator/version names, so
// that the Makefile and the workflows take their lists from the one place
// that keeps them instead of copies.
//
//	go run ./tools/versions           # served releases, comma-separated
//	go run ./tools/versions -pinned   # the real-cluster tier's default pair
//	go run ./tools/versions -json     # as a JSON array (workflow matrices)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/groupquake/groupquake/coordinator/version"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "versions:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("versions", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pinned := fs.Bool("pinned", false, "print the releases the real-cluster tier runs by default (version.Pinned) instead of every served one")
	asJSON := fs.Bool("json", false, "print a JSON array instead of a comma-separated list")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q: the command takes only -pinned and -json", fs.Args())
	}
	vs := version.Served()
	if *pinned {
		vs = version.Pinned()
	}
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.String()
	}
	if *asJSON {
		b, err := json.Marshal(names)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, string(b))
		return err
	}
	_, err := fmt.Fprintln(stdout, strings.Join(names, ","))
	return err
}
