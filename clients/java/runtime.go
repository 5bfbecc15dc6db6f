package java

import (
	"context"
	_ "embed"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sync"

	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/internal/javatool"
)

//go:embed driver/Driver.java
var driverSource []byte

// Runtime is what starting a Java member needs: the java launcher and a
// class path holding kafka-clients of one version and the compiled driver.
type Runtime struct {
	Java         string
	Classpath    string
	KafkaClients string
	// Main is the class to run: "Driver" when empty (the member protocol's
	// driver), "ShareDriver" for the share member (PrepareShare).
	Main string
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

	mu     sync.Mutex
	done   map[string]Runtime
	spring map[string]SpringRuntime
	share  map[string]Runtime
}

// ErrNoJava says the machine has no JDK or no Maven: the Java member kinds
// need java and javac on PATH, and mvn to resolve kafka-clients.
var ErrNoJava = javatool.ErrMissingTools

// CheckJava returns an error wrapping ErrNoJava, saying what is missing and
// what to install, when java, javac or mvn is not on PATH.
func CheckJava() error {
	return javatool.CheckTools("the Java member kinds (java-*)")
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
	return t.prepare(ctx, version, &t.done, driverSource, "Driver", "")
}

// prepare is Prepare and PrepareShare: the Runtime of a driver (source,
// whose class is class, run as main) for kafka-clients version, kept in
// *cache by version.
func (t *Toolchain) prepare(ctx context.Context, version string, cache *map[string]Runtime, source []byte, class, main string) (Runtime, error) {
	if err := CheckVersion(version); err != nil {
		return Runtime{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rt, ok := (*cache)[version]; ok {
		return rt, nil
	}
	if err := CheckJava(); err != nil {
		return Runtime{}, err
	}
	java, _ := exec.LookPath("java")
	mvn := javatool.Maven{Args: t.MavenArgs, Logf: t.logf}
	classpath, err := mvn.Build(ctx, javatool.Program{
		Source: source, Class: class, Cache: version,
		Artifacts: []javatool.Artifact{{Group: "org.apache.kafka", Name: "kafka-clients", Version: version}},
	})
	if err != nil {
		return Runtime{}, err
	}
	rt := Runtime{Java: java, Classpath: classpath, KafkaClients: version, Main: main}
	if *cache == nil {
		*cache = map[string]Runtime{}
	}
	(*cache)[version] = rt
	return rt, nil
}

// Command is the driver as a program: java flags -cp Classpath Main.
func (rt Runtime) Command(flags []string) process.Command {
	main := rt.Main
	if main == "" {
		main = "Driver"
	}
	return process.Command{Path: rt.Java, Args: append(slices.Clone(flags), "-cp", rt.Classpath, main)}
}

func (t *Toolchain) logf(format string, args ...any) {
	if t.Logf != nil {
		t.Logf("java: "+format, args...)
	}
}
