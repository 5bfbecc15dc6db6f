package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/groupquake/groupquake/harness/cluster"
	"github.com/groupquake/groupquake/harness/kinds"
	"github.com/groupquake/groupquake/harness/run"
)

// schemaDir holds the JSON Schema of every --json document
// (docs/json-schema.md says which command prints which).
const schemaDir = "../../docs/schema"

// schemaBase is the $id prefix of the schema files.
const schemaBase = "https://github.com/groupquake/groupquake/docs/schema/"

// compileSchema compiles docs/schema/name.json, its references resolved
// among the files of docs/schema (never fetched).
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	files, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schema files in %s (%v)", schemaDir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if id, _ := doc.(map[string]any)["$id"].(string); id != schemaBase+filepath.Base(f) {
			t.Fatalf("%s: $id %q, want %q", f, id, schemaBase+filepath.Base(f))
		}
		if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	s, err := c.Compile(schemaBase + name + ".json")
	if err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	return s
}

// validateJSON checks that doc, a command's --json output, is one JSON
// document valid against docs/schema/name.json, and returns it decoded.
func validateJSON(t *testing.T, name string, doc []byte) map[string]any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("%s: stdout is not one JSON document (%v):\n%s", name, err, doc)
	}
	if err := compileSchema(t, name).Validate(inst); err != nil {
		t.Errorf("%s: the output does not follow docs/schema/%s.json: %v\n%s", name, name, err, doc)
	}
	m, _ := inst.(map[string]any)
	if v, _ := m["schema_version"].(json.Number); string(v) != "1" {
		t.Errorf("%s: schema_version %v, want 1", name, m["schema_version"])
	}
	return m
}

// jsonCall runs a command line with a live context and returns its exit
// status and stdout.
func jsonCall(t *testing.T, args ...string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, args, &stdout, &stderr)
	if code == exitBadInput {
		t.Fatalf("%q: exit 2:\n%s", args, stderr.String())
	}
	return code, stdout.Bytes()
}

// TestJSONSchemas runs every command that takes --json, on the embedded
// cluster or offline inputs, and validates what it prints against its
// schema in docs/schema. run --json (one run, the campaign) is validated
// by TestRunEmbeddedJSON and TestRunCampaignEmbedded.
func TestJSONSchemas(t *testing.T) {
	fx := makeFixtures(t)
	tmp := t.TempDir()

	t.Run("version", func(t *testing.T) {
		_, out := jsonCall(t, "version", "--json")
		validateJSON(t, "version", out)
	})
	t.Run("check", func(t *testing.T) {
		_, out := jsonCall(t, "check", fx.killed, "--json")
		m := validateJSON(t, "run", out)
		if m["judged"] != true || m["tally"] == nil {
			t.Errorf("check of a judged run: judged %v, tally %v", m["judged"], m["tally"])
		}
	})
	t.Run("check never happened", func(t *testing.T) {
		dir := filepath.Join(tmp, "never")
		setupOnly(t, dir)
		code, out := jsonCall(t, "check", "--json", dir)
		m := validateJSON(t, "run", out)
		if code != exitFailed || m["judged"] != false || m["tally"] != nil || m["error"] == nil {
			t.Errorf("a run that never happened: exit %d, judged %v, tally %v, error %v", code, m["judged"], m["tally"], m["error"])
		}
	})
	t.Run("run never happened", func(t *testing.T) {
		code, out := jsonCall(t, "run", "--bootstrap", closedPort(t), "--scenario", "baseline", "--duration", "2s", "--out", filepath.Join(tmp, "r"), "--json", "-q")
		m := validateJSON(t, "run", out)
		if code != exitFailed || m["judged"] != false || m["tally"] != nil {
			t.Errorf("exit %d, judged %v, tally %v", code, m["judged"], m["tally"])
		}
	})
	t.Run("diff", func(t *testing.T) {
		_, out := jsonCall(t, "diff", "--embedded", "--scenarios", "none", "--from", "4.1.2", "--json")
		validateJSON(t, "diff", out)
		_, out = jsonCall(t, "diff", "--embedded", "--scenarios", "none", "--from", "4.4.0", "--to", "4.4.0", "--json")
		validateJSON(t, "diff", out)
	})
	t.Run("scale", func(t *testing.T) {
		_, out := jsonCall(t, "scale", "--embedded", "--members", "2", "--protocol", "consumer", "--partitions", "2", "--steady", "0", "--no-restart", "--seed", "1", "--json", "-q")
		m := validateJSON(t, "scale", out)
		if reps, _ := m["reports"].([]any); len(reps) != 1 {
			t.Errorf("scale: %d reports, want 1", len(reps))
		}
	})
	t.Run("replay", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		h, err := cluster.StartEmbedded(ctx, cluster.EmbeddedConfig{Version: "4.4.0"})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close(context.Background())
		p, err := run.NewPlan(21, run.Options{Embedded: true, Kafka: "4.4.0", Kinds: []string{"consumer", "kgo-consumer"}, Partitions: 2, Duration: 2 * time.Second}, kinds.Default().Kinds())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.Run(ctx, run.Config{Plan: p, Dir: filepath.Join(tmp, "replayed"), Cluster: h}); err != nil {
			t.Fatal(err)
		}
		_, out := jsonCall(t, "replay", "--bootstrap", strings.Join(h.Bootstrap(), ","), "--group", p.Group, "--kafka", "4.4.0", "--json")
		m := validateJSON(t, "replay", out)
		if rows, _ := m["rows"].([]any); len(rows) == 0 {
			t.Errorf("replay compared nothing:\n%s", out)
		}
	})
}

// TestSchemasRefuseDrift: the schemas are strict enough to catch a field
// renamed back (tally → counts), a duration in nanoseconds, and a missing
// schema_version.
// schemaRefuses fails t unless schema s refuses doc once mutate changed
// it (what says how).
func schemaRefuses(t *testing.T, s *jsonschema.Schema, doc []byte, what string, mutate func(map[string]any)) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	mutate(m)
	b, _ := json.Marshal(m)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err == nil {
		t.Errorf("%s: the schema accepts it", what)
	}
}

func TestSchemasRefuseDrift(t *testing.T) {
	fx := makeFixtures(t)
	_, out := jsonCall(t, "check", fx.killed, "--json")
	validateJSON(t, "run", out)
	s := compileSchema(t, "run")
	for _, mutate := range []struct {
		what string
		f    func(map[string]any)
	}{
		{"counts for tally", func(m map[string]any) { m["counts"] = m["tally"]; delete(m, "tally") }},
		{"no schema_version", func(m map[string]any) { delete(m, "schema_version") }},
		{"schema_version 2", func(m map[string]any) { m["schema_version"] = 2 }},
		{"a duration in ns", func(m map[string]any) { m["duration_ns"] = 1000 }},
		{"a verdict without a name", func(m map[string]any) {
			v := m["verdicts"].([]any)[0].(map[string]any)
			delete(v, "name")
		}},
	} {
		schemaRefuses(t, s, out, mutate.what, mutate.f)
	}
}
