package python_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/groupquake/groupquake/clients/process/python"
)

// TestScriptIsTheSource: the script written into the cache is member.py as
// embedded, under GROUPQUAKE_CACHE, and written once.
func TestScriptIsTheSource(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("GROUPQUAKE_CACHE", cache)
	path, err := python.Script()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(path, filepath.Join(cache, "python")+string(filepath.Separator)) {
		t.Fatalf("script %s is not under GROUPQUAKE_CACHE %s", path, cache)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, python.Source()) || len(b) == 0 {
		t.Fatalf("script %s (%d bytes) is not member.py (%d bytes)", path, len(b), len(python.Source()))
	}
	again, err := python.Script()
	if err != nil || again != path {
		t.Fatalf("second Script() = %s, %v; want %s", again, err, path)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Fatalf("the cache holds %d files, want the script alone", len(ents))
	}
}

// TestCheckSaysWhatToInstall: without python3 on PATH, or with one that
// cannot import confluent_kafka, Check fails with ErrMissing and says what
// to install.
func TestCheckSaysWhatToInstall(t *testing.T) {
	t.Run("no python3", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := python.Check(context.Background())
		if !errors.Is(err, python.ErrMissing) || !strings.Contains(err.Error(), "python3 is not on PATH") || !strings.Contains(err.Error(), "confluent-kafka") {
			t.Fatalf("Check without python3 = %v; want ErrMissing saying python3 is missing and what to install", err)
		}
	})
	t.Run("no confluent_kafka", func(t *testing.T) {
		fakePython(t, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'confluent_kafka'\" >&2\nexit 1\n")
		_, err := python.Check(context.Background())
		if !errors.Is(err, python.ErrMissing) || !strings.Contains(err.Error(), "cannot import confluent_kafka") || !strings.Contains(err.Error(), "No module named") {
			t.Fatalf("Check with a python3 without confluent_kafka = %v; want ErrMissing naming the import error", err)
		}
	})
	t.Run("versions", func(t *testing.T) {
		bin := fakePython(t, "#!/bin/sh\necho 2.16.1 2.16.0\n")
		rt, err := python.Check(context.Background())
		if err != nil || rt.ConfluentKafka != "2.16.1" || rt.Librdkafka != "2.16.0" || rt.Python != filepath.Join(bin, "python3") {
			t.Fatalf("Check = %+v, %v; want confluent-kafka 2.16.1, librdkafka 2.16.0 of %s", rt, err, bin)
		}
	})
}

// fakePython puts a python3 that runs script (a shell script) first on
// PATH for the test and returns its directory.
func fakePython(t *testing.T, script string) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	return bin
}
