package kafkaref

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/groupquake/groupquake/clients/java"
)

//go:embed KafkaRef.java
var driverSource []byte

// Runtime runs KafkaRef.java against the kafka-group-coordinator jar of one
// Kafka release.
type Runtime struct {
	Java      string
	Classpath string
	// Kafka is the release of the jars.
	Kafka string
	// JavaMajor is the JVM's major version: the homogeneous uniform
	// builder's HashSet order depends on it (assignor.JavaVersion).
	JavaMajor int
	// JVMFlags go before the class name (heap size).
	JVMFlags []string
}

const pomTemplate = `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.groupquake</groupId>
  <artifactId>kafkaref</artifactId>
  <version>1</version>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-group-coordinator</artifactId><version>%s</version></dependency>
  </dependencies>
</project>
`

// Prepare resolves org.apache.kafka:kafka-group-coordinator of release
// kafka and its runtime dependencies from Maven Central with mvn (the
// machine's Maven settings apply) and compiles KafkaRef.java against them
// with javac, as clients/java does for kafka-clients. Both are cached under
// $GROUPQUAKE_CACHE (else the user cache directory's groupquake/) in
// java/group-coordinator-<kafka>/. logf reports the slow steps (nil: silent).
func Prepare(ctx context.Context, kafka string, logf func(string, ...any)) (Runtime, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := java.CheckVersion(kafka); err != nil {
		return Runtime{}, err
	}
	if err := java.CheckJava(); err != nil {
		return Runtime{}, err
	}
	javaBin, _ := exec.LookPath("java")
	major, err := javaMajor(ctx, javaBin)
	if err != nil {
		return Runtime{}, err
	}
	root := os.Getenv("GROUPQUAKE_CACHE")
	if root == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return Runtime{}, fmt.Errorf("no cache directory for Kafka's group-coordinator jars: set GROUPQUAKE_CACHE: %v", err)
		}
		root = filepath.Join(d, "groupquake")
	}
	dir := filepath.Join(root, "java", "group-coordinator-"+kafka)
	libs, err := resolve(ctx, dir, kafka, logf)
	if err != nil {
		return Runtime{}, err
	}
	classes, err := compile(ctx, dir, libs)
	if err != nil {
		return Runtime{}, err
	}
	return Runtime{
		Java:      javaBin,
		Classpath: classes + string(os.PathListSeparator) + filepath.Join(libs, "*"),
		Kafka:     kafka,
		JavaMajor: major,
		JVMFlags:  []string{"-Xms1g", "-Xmx4g"},
	}, nil
}

var javaVersionRE = regexp.MustCompile(`version "([0-9]+)`)

func javaMajor(ctx context.Context, javaBin string) (int, error) {
	out, err := exec.CommandContext(ctx, javaBin, "-version").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("java -version: %v\n%s", err, out)
	}
	m := javaVersionRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("cannot read the Java version from java -version: %q", firstLine(out))
	}
	return strconv.Atoi(string(m[1]))
}

// resolve puts the jars into dir/libs; the directory appears only when
// resolution succeeded (renamed into place).
func resolve(ctx context.Context, dir, kafka string, logf func(string, ...any)) (string, error) {
	libs := filepath.Join(dir, "libs")
	jar := "kafka-group-coordinator-" + kafka + ".jar"
	if _, err := os.Stat(filepath.Join(libs, jar)); err == nil {
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
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), fmt.Appendf(nil, pomTemplate, kafka), 0o644); err != nil {
		return "", err
	}
	logf("kafkaref: resolving kafka-group-coordinator %s with Maven (the machine's Maven settings apply)", kafka)
	cmd := exec.CommandContext(ctx, "mvn", "-B", "-q", "dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+filepath.Join(work, "libs"))
	cmd.Dir = work
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("resolving kafka-group-coordinator %s with Maven failed (is the version released, and Maven Central or your settings' mirror reachable?): %v\n%s", kafka, err, lastLines(out, 12))
	}
	if _, err := os.Stat(filepath.Join(work, "libs", jar)); err != nil {
		return "", fmt.Errorf("maven resolved kafka-group-coordinator %s but left no %s", kafka, jar)
	}
	os.RemoveAll(libs)
	if err := os.Rename(filepath.Join(work, "libs"), libs); err != nil {
		if _, serr := os.Stat(filepath.Join(libs, jar)); serr == nil {
			return libs, nil // resolved by another process meanwhile
		}
		return "", err
	}
	return libs, nil
}

// compile compiles KafkaRef.java against libs into dir/classes-<source hash>.
func compile(ctx context.Context, dir, libs string) (string, error) {
	sum := sha256.Sum256(driverSource)
	classes := filepath.Join(dir, "classes-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(classes, "KafkaRef.class")); err == nil {
		return classes, nil
	}
	work, err := os.MkdirTemp(dir, "compile-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	src := filepath.Join(work, "KafkaRef.java")
	if err := os.WriteFile(src, driverSource, 0o644); err != nil {
		return "", err
	}
	out := filepath.Join(work, "classes")
	cmd := exec.CommandContext(ctx, "javac", "-nowarn", "--release", "17", "-cp", filepath.Join(libs, "*"), "-d", out, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compiling KafkaRef.java against %s failed: %v\n%s", libs, err, lastLines(b, 20))
	}
	if err := os.Rename(out, classes); err != nil {
		if _, serr := os.Stat(filepath.Join(classes, "KafkaRef.class")); serr == nil {
			return classes, nil // compiled by another process meanwhile
		}
		return "", err
	}
	return classes, nil
}

// Print runs every case of file once and returns what KafkaRef prints for
// it (the format Render writes for the Go side).
func (rt Runtime) Print(ctx context.Context, file string) (string, error) {
	return rt.run(ctx, "print", file)
}

// Timing is one case's time from the Java side.
type Timing struct {
	NsPerOp    float64
	Iterations int
}

// Time runs every case of file for warmupMs, then measures it for at least
// measureMs and minIters iterations, in one JVM, and returns ns/op per case.
func (rt Runtime) Time(ctx context.Context, file string, warmupMs, measureMs, minIters int) (map[string]Timing, error) {
	out, err := rt.run(ctx, "time", file, strconv.Itoa(warmupMs), strconv.Itoa(measureMs), strconv.Itoa(minIters))
	if err != nil {
		return nil, err
	}
	res := map[string]Timing{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[0] != "time" {
			continue
		}
		ns, err1 := strconv.ParseFloat(f[2], 64)
		n, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("KafkaRef printed an unreadable timing line %q", line)
		}
		res[f[1]] = Timing{NsPerOp: ns, Iterations: n}
	}
	return res, nil
}

func (rt Runtime) run(ctx context.Context, args ...string) (string, error) {
	all := append(append(slices.Clone(rt.JVMFlags), "-cp", rt.Classpath, "KafkaRef"), args...)
	cmd := exec.CommandContext(ctx, rt.Java, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("KafkaRef %s (Kafka %s): %v\n%s", args[0], rt.Kafka, err, lastLines(stderr.Bytes(), 20))
	}
	return stdout.String(), nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}

func lastLines(b []byte, n int) string {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
