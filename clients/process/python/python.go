// Package python runs groupquake's member on confluent-kafka, the Python
// client on librdkafka (member.py), as a process speaking the member
// protocol (clients/process, docs/member-protocol.md): groupquake's second
// implementation of the protocol, in another language than the Java one.
// The member kinds confluent-python, confluent-python-cooperative (classic
// protocol) and confluent-python-consumer (KIP-848) of harness/run run it,
// one process per member; `groupquake member-check --impl confluent-python`
// checks it.
//
// member.py is embedded in groupquake and written into the cache directory
// on first use; it runs with the python3 on PATH, which must import
// confluent_kafka (2.12 or newer for the consumer protocol). Check says what
// to install when either is missing.
package python

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/internal/interrupt"
)

//go:embed member.py
var source []byte

// Source is member.py.
func Source() []byte { return bytes.Clone(source) }

// ErrMissing is wrapped by Check's errors: no python3 on PATH, or one that
// cannot import confluent_kafka.
var ErrMissing = errors.New("the confluent-python member kinds need python3 (3.8 or newer) on PATH with confluent-kafka installed")

// Runtime is a python3 that imports confluent_kafka, and the versions it
// reported.
type Runtime struct {
	Python string
	// ConfluentKafka and Librdkafka are the versions the module reports.
	ConfluentKafka, Librdkafka string
}

// Check finds python3 and asks it for confluent_kafka's versions; the error
// (wrapping ErrMissing) says what to install.
func Check(ctx context.Context) (Runtime, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return Runtime{}, fmt.Errorf("%w: python3 is not on PATH (then: python3 -m pip install 'confluent-kafka>=2.12'; Debian 12's python3-confluent-kafka is 1.7, older than the consumer protocol)", ErrMissing)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := interrupt.Command(ctx, py, "-c", "import confluent_kafka as c; v = c.version(); print(v[0] if isinstance(v, tuple) else v, c.libversion()[0])")
	out, err := interrupt.CombinedOutput(cmd)
	if err != nil {
		return Runtime{}, fmt.Errorf("%w: %s cannot import confluent_kafka (install it: %s -m pip install 'confluent-kafka>=2.12'; Debian 12's python3-confluent-kafka is 1.7, older than the consumer protocol): %s", ErrMissing, py, py, lastLine(out))
	}
	f := strings.Fields(string(out))
	if len(f) < 2 {
		return Runtime{}, fmt.Errorf("%w: %s printed %q for confluent_kafka's versions", ErrMissing, py, out)
	}
	return Runtime{Python: py, ConfluentKafka: f[0], Librdkafka: f[1]}, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// Script writes member.py into the cache directory ($GROUPQUAKE_CACHE, else
// the user cache directory's groupquake/), named by its content, and
// returns its path. The file appears whole (written aside and renamed).
func Script() (string, error) {
	root := os.Getenv("GROUPQUAKE_CACHE")
	if root == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for the Python member: set GROUPQUAKE_CACHE: %v", err)
		}
		root = filepath.Join(d, "groupquake")
	}
	dir := filepath.Join(root, "python")
	sum := sha256.Sum256(source)
	path := filepath.Join(dir, "member-"+hex.EncodeToString(sum[:6])+".py")
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, source) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, "member-*.tmp")
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(source)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", werr
	}
	return path, nil
}

// Command checks the runtime and returns the command of one member
// process: python3 -u member.py.
func Command(ctx context.Context) (process.Command, Runtime, error) {
	rt, err := Check(ctx)
	if err != nil {
		return process.Command{}, rt, err
	}
	path, err := Script()
	if err != nil {
		return process.Command{}, rt, err
	}
	return process.Command{Path: rt.Python, Args: []string{"-u", path}}, rt, nil
}
