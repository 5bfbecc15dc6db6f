package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/groupquake/groupquake/coordinator/version"
)

const versionUsage = `Usage: groupquake version [--json]    (or groupquake --version)

Prints groupquake's module version (as the Go build recorded it: a release tag
for 'go install ...@vX', else the commit it was built from) and the Kafka
versions it serves, the default marked.
`

// versionInfo is what `groupquake version` reports.
type versionInfo struct {
	SchemaVersion int    `json:"schema_version"`
	Module        string `json:"module"`
	Version       string `json:"version"`
	Revision      string `json:"revision,omitempty"`
	Time          string `json:"time,omitempty"`
	Modified      bool   `json:"modified,omitempty"`
	Go            string `json:"go"`
	// Kafka lists the served Kafka versions, oldest first; coordinator/version
	// keeps the list.
	Kafka        []string `json:"kafka_versions"`
	DefaultKafka string   `json:"default_kafka"`
}

func buildVersion() versionInfo {
	v := versionInfo{SchemaVersion: schemaVersion, Module: "github.com/groupquake/groupquake", Version: "(unknown)", DefaultKafka: version.Default.String()}
	for _, k := range version.Served() {
		v.Kafka = append(v.Kafka, k.String())
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = bi.GoVersion
	if bi.Main.Path != "" {
		v.Module = bi.Main.Path
	}
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", versionUsage)
	asJSON := fs.Bool("json", false, "print the versions as JSON")
	if err := parseNone(fs, args, stdout); err != nil {
		return err
	}
	v := buildVersion()
	if *asJSON {
		return writeJSON(stdout, v)
	}
	fmt.Fprintf(stdout, "groupquake %s, module %s", v.Version, v.Module)
	if v.Revision != "" {
		fmt.Fprintf(stdout, ", commit %s", v.Revision)
		if v.Time != "" {
			fmt.Fprintf(stdout, " of %s", v.Time)
		}
		if v.Modified {
			fmt.Fprint(stdout, ", with local changes")
		}
	}
	if v.Go != "" {
		fmt.Fprintf(stdout, ", %s", v.Go)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "Kafka versions served: %s (default %s)\n", strings.Join(v.Kafka, ", "), v.DefaultKafka)
	return nil
}
