package java

import (
	"strings"
	"testing"
)

// TestSpringKafkaFor: each kafka-clients version runs the newest Spring
// Kafka release whose own kafka-clients is not newer (spring-kafka 4.2.0
// is built on 4.4.0, 4.1.2 on 4.2.2, 4.0.8 on 4.1.2); older ones and
// versions that are no release number are errors that say why.
func TestSpringKafkaFor(t *testing.T) {
	for clients, want := range map[string]string{
		"4.4.0": "4.2.0", "4.4.1": "4.2.0", "4.5.0": "4.2.0", "5.0.0": "4.2.0",
		"4.3.1": "4.1.2", "4.2.0": "4.1.2", "4.1.2": "4.0.8", "4.1.0": "4.0.8",
	} {
		got, err := SpringKafkaFor(clients)
		if err != nil || got != want {
			t.Errorf("SpringKafkaFor(%s) = %q, %v; want %s", clients, got, err, want)
		}
	}
	for clients, why := range map[string]string{"4.0.1": "4.1 or newer", "3.9.1": "4.1 or newer", "4.4": "not a release number"} {
		if got, err := SpringKafkaFor(clients); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("SpringKafkaFor(%s) = %q, %v; want an error saying %q", clients, got, err, why)
		}
	}
}

// TestSpringCommand: the Spring member's command is the JVM with the given
// flags, the spring-kafka release as a system property (ready reports it)
// and SpringMember as the main class on the runtime's class path.
func TestSpringCommand(t *testing.T) {
	rt := SpringRuntime{Java: "/jdk/bin/java", Classpath: "a:b/*", SpringKafka: "4.2.0", KafkaClients: "4.4.0"}
	c := rt.Command([]string{"-Xmx64m"})
	want := []string{"-Xmx64m", "-Dgroupquake.spring-kafka=4.2.0", "-cp", "a:b/*", "SpringMember"}
	if c.Path != "/jdk/bin/java" || strings.Join(c.Args, " ") != strings.Join(want, " ") {
		t.Errorf("Command = %s %v; want /jdk/bin/java %v", c.Path, c.Args, want)
	}
}
