package java

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
	"regexp"
	"strings"
	"sync"
)

//go:embed driver/Driver.java
var driverSource []byte

// Runtime is what starting a Java member needs: the java launcher and a
// class path holding kafka-clients of one version and the compiled driver.
type Runtime struct {
	Java         string
	Classpath    string
	KafkaClients string
}

// Toolchain prepares Runtimes: kafka-clients and its runtime dependencies
// are resolved from Maven Central with mvn (the machine's Maven settings
// apply) and the driver (driver/Driver.java) is compiled against them with
// javac. Both are cached under the user cache directory ($GROUPQUAKE_CACHE,
// else os.UserCacheDir()/groupquake) in java/<version>/, the jars once per
// version and the classes once per version and driver source, so only the
// first member of a version pays for them. Safe for concurrent use.
type Toolchain struct {
	// MavenArgs are extra arguments for mvn (for example -o, or -s FILE).
	MavenArgs []string
	// Logf reports slow steps; nil is silent.
	Logf func(string, ...any)

	mu   sync.Mutex
	done map[string]Runtime
}

// ErrNoJava says the machine has no JDK: the Java member kinds need java
// and javac on PATH.
var ErrNoJava = errors.New("the Java member kinds (java-*) need a JDK 17 or newer: java and javac on PATH (Debian: apt-get install openjdk-17-jdk-headless), and mvn to resolve kafka-clients (apt-get install maven)")

// CheckJava returns ErrNoJava, wrapped with what is missing, when java,
// javac or mvn is not on PATH.
func CheckJava() error {
	var missing []string
	for _, t := range []string{"java", "javac", "mvn"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w; missing: %s", ErrNoJava, strings.Join(missing, ", "))
	}
	return nil
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[A-Za-z0-9.]+)?$`)

// CheckVersion says whether version looks like a kafka-clients release.
func CheckVersion(version string) error {
	if !versionRE.MatchString(version) {
		return fmt.Errorf("kafka-clients version %q is not a release number such as 4.4.0", version)
	}
	return nil
}

// Prepare returns the Runtime for kafka-clients version, resolving and
// compiling what the cache does not hold yet.
func (t *Toolchain) Prepare(ctx context.Context, version string) (Runtime, error) {
	if err := CheckVersion(version); err != nil {
		return Runtime{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rt, ok := t.done[version]; ok {
		return rt, nil
	}
	if err := CheckJava(); err != nil {
		return Runtime{}, err
	}
	java, _ := exec.LookPath("java")
	root, err := cacheRoot()
	if err != nil {
		return Runtime{}, err
	}
	dir := filepath.Join(root, "java", version)
	libs, err := t.jars(ctx, dir, version)
	if err != nil {
		return Runtime{}, err
	}
	classes, err := t.compile(ctx, dir, libs)
	if err != nil {
		return Runtime{}, err
	}
	rt := Runtime{Java: java, Classpath: classes + string(os.PathListSeparator) + filepath.Join(libs, "*"), KafkaClients: version}
	if t.done == nil {
		t.done = map[string]Runtime{}
	}
	t.done[version] = rt
	return rt, nil
}

func (t *Toolchain) logf(format string, args ...any) {
	if t.Logf != nil {
		t.Logf(format, args...)
	}
}

func cacheRoot() (string, error) {
	if d := os.Getenv("GROUPQUAKE_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the Java members' jars: set GROUPQUAKE_CACHE: %v", err)
	}
	return filepath.Join(d, "groupquake"), nil
}

const pomTemplate = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.groupquake</groupId>
  <artifactId>java-member</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>%s</version></dependency>
  </dependencies>
</project>
`

// jars resolves kafka-clients version into dir/libs. The directory appears
// only when resolution succeeded (renamed into place), so a failed or
// interrupted run leaves nothing half-made.
func (t *Toolchain) jars(ctx context.Context, dir, version string) (string, error) {
	libs := filepath.Join(dir, "libs")
	if _, err := os.Stat(filepath.Join(libs, "kafka-clients-"+version+".jar")); err == nil {
		return libs, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	work, err := os.MkdirTemp(dir, "resolve-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), fmt.Appendf(nil, pomTemplate, version), 0o644); err != nil {
		return "", err
	}
	t.logf("java: resolving kafka-clients %s with Maven (the machine's Maven settings apply)", version)
	args := append([]string{"-B", "-q"}, t.MavenArgs...)
	args = append(args, "dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(work, "libs"))
	cmd := exec.CommandContext(ctx, "mvn", args...)
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("resolving kafka-clients %s with Maven failed (is the version released, and Maven Central or your settings' mirror reachable?): %v\n%s", version, err, lastLines(out, 12))
	}
	if _, err := os.Stat(filepath.Join(work, "libs", "kafka-clients-"+version+".jar")); err != nil {
		return "", fmt.Errorf("maven resolved kafka-clients %s but left no kafka-clients-%s.jar", version, version)
	}
	os.RemoveAll(libs)
	if err := os.Rename(filepath.Join(work, "libs"), libs); err != nil {
		return "", err
	}
	return libs, nil
}

// compile compiles the driver against libs into dir/classes-<source hash>.
func (t *Toolchain) compile(ctx context.Context, dir, libs string) (string, error) {
	sum := sha256.Sum256(driverSource)
	classes := filepath.Join(dir, "classes-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(classes, "Driver.class")); err == nil {
		return classes, nil
	}
	work, err := os.MkdirTemp(dir, "compile-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "Driver.java")
	if err := os.WriteFile(src, driverSource, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(work, "classes")
	cmd := exec.CommandContext(ctx, "javac", "-nowarn", "--release", "17", "-cp", filepath.Join(libs, "*"), "-d", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compiling the Java member driver against %s failed: %v\n%s", libs, err, lastLines(b, 20))
	}
	if err := os.Rename(out, classes); err != nil {
		if _, serr := os.Stat(filepath.Join(classes, "Driver.class")); serr == nil {
			return classes, nil // compiled by another process meanwhile
		}
		return "", err
	}
	return classes, nil
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
