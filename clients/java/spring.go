package java

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/groupquake/groupquake/clients/process"
	"github.com/groupquake/groupquake/internal/javatool"
)

//go:embed spring/SpringMember.java
var springSource []byte

// SpringRuntime is what starting a Spring Kafka member needs: the java
// launcher and a class path holding spring-kafka, kafka-clients of one
// version, the driver's classes (SpringMember uses its JSON helpers) and
// SpringMember's.
type SpringRuntime struct {
	Java         string
	Classpath    string
	SpringKafka  string
	KafkaClients string
}

// springReleases pairs each spring-kafka release groupquake runs with the
// kafka-clients minor version its own pom depends on: the newest release of
// each line on Maven Central (spring-kafka 4.2.0 is built on kafka-clients
// 4.4.0, 4.1.2 on 4.2.2, 4.0.8 on 4.1.2).
var springReleases = []struct{ spring, clients string }{
	{"4.2.0", "4.4"},
	{"4.1.2", "4.2"},
	{"4.0.8", "4.1"},
}

// SpringKafkaFor is the spring-kafka release groupquake runs beside
// kafka-clients version: the newest one whose own kafka-clients is not
// newer than version's minor release (kafka-clients 4.4 runs spring-kafka
// 4.2.0, its own pairing; 4.3 runs 4.1.2, built on 4.2). Older than 4.1 is
// an error: spring-kafka 4.0 is built on kafka-clients 4.1.
func SpringKafkaFor(kafkaClients string) (string, error) {
	if err := CheckVersion(kafkaClients); err != nil {
		return "", err
	}
	f := strings.SplitN(kafkaClients, ".", 3)
	major, _ := strconv.Atoi(f[0])
	minor, _ := strconv.Atoi(f[1])
	for _, r := range springReleases {
		g := strings.SplitN(r.clients, ".", 2)
		rmaj, _ := strconv.Atoi(g[0])
		rmin, _ := strconv.Atoi(g[1])
		if major > rmaj || major == rmaj && minor >= rmin {
			return r.spring, nil
		}
	}
	return "", fmt.Errorf("kafka-clients %s: the Spring Kafka member needs kafka-clients 4.1 or newer (spring-kafka 4.0.8 is built on 4.1.2); pass --kafka-clients 4.4.0", kafkaClients)
}

// PrepareSpring returns the SpringRuntime for kafka-clients version (and
// the spring-kafka release SpringKafkaFor gives, unless spring names one),
// resolving and compiling what the cache does not hold yet: the driver
// against kafka-clients, then SpringMember against it and the resolved
// jars.
func (t *Toolchain) PrepareSpring(ctx context.Context, version, spring string) (SpringRuntime, error) {
	if spring == "" {
		s, err := SpringKafkaFor(version)
		if err != nil {
			return SpringRuntime{}, err
		}
		spring = s
	}
	if err := CheckVersion(spring); err != nil {
		return SpringRuntime{}, fmt.Errorf("spring-kafka: %w", err)
	}
	if err := javatool.CheckTools("the Spring Kafka member kinds (spring-kafka*)"); err != nil {
		return SpringRuntime{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	key := "spring/" + spring + "/" + version
	if rt, ok := t.spring[key]; ok {
		return rt, nil
	}
	java, _ := exec.LookPath("java")
	mvn := javatool.Maven{Args: t.MavenArgs, Logf: t.logf}
	dir, err := javatool.CacheDir("spring-" + spring + "-" + version)
	if err != nil {
		return SpringRuntime{}, err
	}
	// kafka-clients named beside spring-kafka: Maven takes the nearer, so
	// the version asked for wins over spring-kafka's own.
	libs, err := mvn.Resolve(ctx, []javatool.Artifact{
		{Group: "org.springframework.kafka", Name: "spring-kafka", Version: spring},
		{Group: "org.apache.kafka", Name: "kafka-clients", Version: version},
	}, dir)
	if err != nil {
		return SpringRuntime{}, err
	}
	jars := filepath.Join(libs, "*")
	sep := string(os.PathListSeparator)
	driver, err := javatool.Compile(ctx, driverSource, "Driver", jars, dir)
	if err != nil {
		return SpringRuntime{}, err
	}
	// SpringMember's classes are named by its source and the driver's, so a
	// new driver compiles it again.
	src := append(slices.Clone(springSource), []byte("\n// compiled against "+driver+"\n")...)
	classes, err := javatool.Compile(ctx, src, "SpringMember", driver+sep+jars, dir)
	if err != nil {
		return SpringRuntime{}, err
	}
	rt := SpringRuntime{Java: java, Classpath: classes + sep + driver + sep + jars, SpringKafka: spring, KafkaClients: version}
	if t.spring == nil {
		t.spring = map[string]SpringRuntime{}
	}
	t.spring[key] = rt
	return rt, nil
}

// Command is the Spring member as a program: java flags -cp Classpath
// SpringMember.
func (rt SpringRuntime) Command(flags []string) process.Command {
	args := append(slices.Clone(flags), "-Dgroupquake.spring-kafka="+rt.SpringKafka, "-cp", rt.Classpath, "SpringMember")
	return process.Command{Path: rt.Java, Args: args}
}
