// Package javatool holds what groupquake's Java sides share: resolving
// Maven artifacts from Maven Central into a cached directory of jars (with
// mvn, so the machine's Maven settings apply), compiling one embedded Java
// source against them with javac, and the checks that say what to install
// when the JDK or Maven is missing. clients/java uses it for the Java
// members (kafka-clients and driver/Driver.java), harness/kafkaref for
// Kafka's group-coordinator classes and KafkaRef.java.
//
// Everything it writes appears only when it is whole: resolution and
// compilation happen in a temporary directory beside the result and are
// renamed into place, so a failed or interrupted run leaves nothing
// half-made, and two processes preparing the same thing both succeed.
package javatool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/internal/interrupt"
	"github.com/groupquake/groupquake/internal/progress"
)

// debian names the Debian package that provides each tool.
var debian = map[string]string{
	"java":  "openjdk-17-jdk-headless",
	"javac": "openjdk-17-jdk-headless",
	"mvn":   "maven",
}

// ErrMissingTools is wrapped by the errors CheckTools, Resolve and Compile
// return when a tool they need is not on PATH.
var ErrMissingTools = errors.New("a JDK 17 or newer (java, javac) and Maven (mvn) must be on PATH")

// missingError names the tools that are not on PATH and what to install.
type missingError struct {
	who     string
	missing []string
}

func (e *missingError) Error() string {
	var pkgs []string
	for _, t := range e.missing {
		if p := debian[t]; !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	return fmt.Sprintf("%s: %v; missing: %s (Debian: apt-get install %s)",
		e.who, ErrMissingTools, strings.Join(e.missing, ", "), strings.Join(pkgs, " "))
}

func (e *missingError) Unwrap() error { return ErrMissingTools }

// CheckTools returns nil when java, javac and mvn are all on PATH, and
// otherwise an error wrapping ErrMissingTools that starts with who (what
// needs them, for example "the Java member kinds (java-*)") and names the
// missing tools and the packages to install.
func CheckTools(who string) error {
	return need(who, "java", "javac", "mvn")
}

func need(who string, tools ...string) error {
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return &missingError{who: who, missing: missing}
	}
	return nil
}

// CacheDir returns the directory for name's jars and classes:
// java/<name> under $GROUPQUAKE_CACHE, else under the user cache
// directory's groupquake/.
func CacheDir(name string) (string, error) { return cacheDir(name) }

func cacheDir(name string) (string, error) {
	root := os.Getenv("GROUPQUAKE_CACHE")
	if root == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for the Java jars and classes of %s: set GROUPQUAKE_CACHE: %v", name, err)
		}
		root = filepath.Join(d, "groupquake")
	}
	return filepath.Join(root, "java", name), nil
}

// Artifact is one Maven coordinate.
type Artifact struct {
	Group, Name, Version string
}

// Jar is the file name Maven gives the artifact's jar.
func (a Artifact) Jar() string { return a.Name + "-" + a.Version + ".jar" }

func (a Artifact) String() string { return a.Name + " " + a.Version }

// Maven resolves artifacts with the mvn on PATH.
type Maven struct {
	// Args are extra arguments for mvn (for example -o, or -s FILE).
	Args []string
	// Logf reports the slow step; nil is silent.
	Logf func(string, ...any)
}

// pom lists artifacts as the dependencies of a throwaway project.
func pom(artifacts []Artifact) []byte {
	var b bytes.Buffer
	b.WriteString(`<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.groupquake</groupId>
  <artifactId>javatool-resolve</artifactId>
  <version>1</version>
  <dependencies>
`)
	for _, a := range artifacts {
		fmt.Fprintf(&b, "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n", a.Group, a.Name, a.Version)
	}
	b.WriteString("  </dependencies>\n</project>\n")
	return b.Bytes()
}

func describe(artifacts []Artifact) string {
	s := make([]string, len(artifacts))
	for i, a := range artifacts {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// hasJars says whether libs holds the jar of every artifact.
func hasJars(libs string, artifacts []Artifact) error {
	for _, a := range artifacts {
		if _, err := os.Stat(filepath.Join(libs, a.Jar())); err != nil {
			return fmt.Errorf("no %s", a.Jar())
		}
	}
	return nil
}

// Resolve puts artifacts and their runtime dependencies into dir/libs and
// returns that directory. A directory that already holds every artifact's
// jar is taken as it is; otherwise mvn resolves them (the machine's Maven
// settings apply). A Maven failure is returned with the last lines of
// Maven's output.
func (m Maven) Resolve(ctx context.Context, artifacts []Artifact, dir string) (string, error) {
	if len(artifacts) == 0 {
		return "", errors.New("javatool: Resolve needs at least one artifact")
	}
	libs := filepath.Join(dir, "libs")
	if hasJars(libs, artifacts) == nil {
		return libs, nil
	}
	what := describe(artifacts)
	if err := need("resolving "+what, "mvn"); err != nil {
		return "", err
	}
	work, err := workDir(dir, "resolve-", "pom.xml", pom(artifacts))
	if err != nil {
		return "", err
	}
	defer interrupt.RemoveTemp(work)
	if m.Logf != nil {
		m.Logf("resolving %s with Maven (the machine's Maven settings apply)", what)
	}
	if out, err := m.CopyDependencies(ctx, work, "resolving "+what); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("resolving %s with Maven: %w", what, context.Cause(ctx))
		}
		return "", fmt.Errorf("resolving %s with Maven failed (is the version released, and Maven Central or your settings' mirror reachable?): %v\n%s", what, err, LastLines(out, 12))
	}
	if err := hasJars(filepath.Join(work, "libs"), artifacts); err != nil {
		return "", fmt.Errorf("maven resolved %s but left %v", what, err)
	}
	os.RemoveAll(libs)
	if err := os.Rename(filepath.Join(work, "libs"), libs); err != nil {
		if hasJars(libs, artifacts) == nil {
			return libs, nil // resolved by another process meanwhile
		}
		return "", err
	}
	return libs, nil
}

// CopyDependencies runs Maven in work, whose pom.xml lists what to resolve:
// the runtime dependencies are copied to work/libs, and the jars Maven
// downloads are counted to Logf under label. It returns Maven's output, whose
// last lines say why it failed.
func (m Maven) CopyDependencies(ctx context.Context, work, label string) ([]byte, error) {
	args := append([]string{"-B"}, m.Args...)
	args = append(args, "dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(work, "libs"))
	cmd := interrupt.Command(ctx, "mvn", args...)
	cmd.Dir = work
	var output bytes.Buffer
	jars := progress.MavenJars(label, m.Logf)
	cmd.Stdout = io.MultiWriter(&output, jars)
	cmd.Stderr = cmd.Stdout
	err := interrupt.Run(cmd)
	jars.Done()
	return output.Bytes(), err
}

// workDir makes dir and in it a fresh work directory (named from prefix)
// that holds the file name with data: Resolve's pom, Compile's source. The
// caller removes it with interrupt.RemoveTemp.
func workDir(dir, prefix, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	work, err := interrupt.MkdirTemp(dir, prefix)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(work, name), data, 0o644); err != nil {
		interrupt.RemoveTemp(work)
		return "", err
	}
	return work, nil
}

// Compile compiles src, the source of the public class class, with javac
// (for Java 17) against classpath into dir/classes-<source hash> and
// returns that directory. A directory that already holds class.class is
// taken as it is, so a source is compiled once per cache directory. A
// javac failure is returned with the last lines of its output.
func Compile(ctx context.Context, src []byte, class, classpath, dir string) (string, error) {
	sum := sha256.Sum256(src)
	classes := filepath.Join(dir, "classes-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(classes, class+".class")); err == nil {
		return classes, nil
	}
	if err := need("compiling "+class+".java", "javac"); err != nil {
		return "", err
	}
	work, err := workDir(dir, "compile-", class+".java", src)
	if err != nil {
		return "", err
	}
	defer interrupt.RemoveTemp(work)
	file := filepath.Join(work, class+".java")
	out := filepath.Join(work, "classes")
	cmd := interrupt.Command(ctx, "javac", "-nowarn", "--release", "17", "-cp", classpath, "-d", out, file)
	if b, err := interrupt.CombinedOutput(cmd); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("compiling %s.java: %w", class, context.Cause(ctx))
		}
		return "", fmt.Errorf("compiling %s.java against %s failed: %v\n%s", class, classpath, err, LastLines(b, 20))
	}
	if err := os.Rename(out, classes); err != nil {
		if _, serr := os.Stat(filepath.Join(classes, class+".class")); serr == nil {
			return classes, nil // compiled by another process meanwhile
		}
		return "", err
	}
	return classes, nil
}

// Program is a Java program of one source file that runs against Maven
// artifacts and their runtime dependencies.
type Program struct {
	// Source is the source of the public class Class.
	Source []byte
	Class  string
	// Artifacts are what Source is compiled and run against.
	Artifacts []Artifact
	// Cache names the program's directory under the cache root (cacheDir):
	// its jars go into libs/, its classes into classes-<source hash>/.
	Cache string
}

// Build resolves p's artifacts with m and compiles p's source against them,
// each only when the cache does not hold it yet, and returns the class path
// that runs p (java -cp CLASSPATH p.Class).
func (m Maven) Build(ctx context.Context, p Program) (string, error) {
	dir, err := cacheDir(p.Cache)
	if err != nil {
		return "", err
	}
	libs, err := m.Resolve(ctx, p.Artifacts, dir)
	if err != nil {
		return "", err
	}
	jars := filepath.Join(libs, "*")
	classes, err := Compile(ctx, p.Source, p.Class, jars, dir)
	if err != nil {
		return "", err
	}
	return classes + string(os.PathListSeparator) + jars, nil
}

// LastLines returns the last n lines of b, surrounding space trimmed: the
// part of a tool's output that says why it failed.
func LastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
