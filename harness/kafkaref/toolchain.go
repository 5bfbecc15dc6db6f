package kafkaref

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/groupquake/groupquake/clients/java"
	"github.com/groupquake/groupquake/internal/javatool"

	"github.com/groupquake/groupquake/internal/interrupt"
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

// Prepare resolves org.apache.kafka:kafka-group-coordinator of release
// kafka and its runtime dependencies from Maven Central with mvn (the
// machine's Maven settings apply) and compiles KafkaRef.java against them
// with javac, as clients/java does for kafka-clients (both with
// internal/javatool). Both are cached under $GROUPQUAKE_CACHE (else the user
// cache directory's groupquake/) in java/group-coordinator-<kafka>/. logf
// reports the slow steps (nil: silent).
func Prepare(ctx context.Context, kafka string, logf func(string, ...any)) (Runtime, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := java.CheckVersion(kafka); err != nil {
		return Runtime{}, err
	}
	if err := javatool.CheckTools("the Kafka reference runner (harness/kafkaref)"); err != nil {
		return Runtime{}, err
	}
	javaBin, _ := exec.LookPath("java")
	major, err := javaMajor(ctx, javaBin)
	if err != nil {
		return Runtime{}, err
	}
	mvn := javatool.Maven{Logf: func(format string, args ...any) { logf("kafkaref: "+format, args...) }}
	classpath, err := mvn.Build(ctx, javatool.Program{
		Source: driverSource, Class: "KafkaRef", Cache: "group-coordinator-" + kafka,
		Artifacts: []javatool.Artifact{{Group: "org.apache.kafka", Name: "kafka-group-coordinator", Version: kafka}},
	})
	if err != nil {
		return Runtime{}, err
	}
	return Runtime{
		Java:      javaBin,
		Classpath: classpath,
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

// Server is one JVM serving the cases of one file (KafkaRef serve): each
// Time call runs one case there while the Go side waits, so a caller can
// alternate between the two sides.
type Server struct {
	rt     Runtime
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer
}

// Serve starts a JVM that loads the cases of file and waits for commands.
func (rt Runtime) Serve(ctx context.Context, file string) (*Server, error) {
	all := append(append(slices.Clone(rt.JVMFlags), "-cp", rt.Classpath, "KafkaRef"), "serve", file)
	s := &Server{rt: rt, cmd: exec.CommandContext(ctx, rt.Java, all...)}
	s.cmd.Stderr = &s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("KafkaRef serve (Kafka %s): %v", rt.Kafka, err)
	}
	s.lines = bufio.NewScanner(stdout)
	return s, nil
}

// Time runs case name for at least ms milliseconds and minIters iterations
// on the Java side and returns its time per iteration.
func (s *Server) Time(name string, ms, minIters int) (Timing, error) {
	if _, err := fmt.Fprintf(s.stdin, "time %s %d %d\n", name, ms, minIters); err != nil {
		return Timing{}, s.failed(err)
	}
	if !s.lines.Scan() {
		return Timing{}, s.failed(s.lines.Err())
	}
	line := s.lines.Text()
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "time" || f[1] != name {
		return Timing{}, fmt.Errorf("KafkaRef serve answered %q to case %s", line, name)
	}
	ns, err1 := strconv.ParseFloat(f[2], 64)
	n, err2 := strconv.Atoi(f[3])
	if err1 != nil || err2 != nil {
		return Timing{}, fmt.Errorf("KafkaRef serve printed an unreadable timing line %q", line)
	}
	return Timing{NsPerOp: ns, Iterations: n}, nil
}

func (s *Server) failed(err error) error {
	return fmt.Errorf("KafkaRef serve (Kafka %s): %v\n%s", s.rt.Kafka, err, javatool.LastLines(s.stderr.Bytes(), 20))
}

// Close ends the JVM.
func (s *Server) Close() error {
	fmt.Fprintln(s.stdin, "quit")
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		return s.failed(err)
	}
	return nil
}

func (rt Runtime) run(ctx context.Context, args ...string) (string, error) {
	all := append(append(slices.Clone(rt.JVMFlags), "-cp", rt.Classpath, "KafkaRef"), args...)
	cmd := interrupt.Command(ctx, rt.Java, all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := interrupt.Run(cmd); err != nil {
		return "", fmt.Errorf("KafkaRef %s (Kafka %s): %v\n%s", args[0], rt.Kafka, err, javatool.LastLines(stderr.Bytes(), 20))
	}
	return stdout.String(), nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	return string(line)
}
