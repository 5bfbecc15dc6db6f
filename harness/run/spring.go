package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
)

// SpringKinds are the member kinds of Spring Kafka: a listener container
// (clients/java/spring/SpringMember.java, one JVM per member) on the
// plan's kafka-clients, speaking the member protocol and committing on its
// own (AckMode BATCH). Like the Java kinds they are never in
// DefaultRegistry, so a seed never draws them; WithSpring adds the ones a
// user names.
func SpringKinds() []ProcessKind {
	return []ProcessKind{
		{Name: "spring-kafka", Protocol: clients.Classic, Offers: javaDefaultOffers,
			Doc: "a Spring Kafka listener container (AckMode BATCH), classic protocol with Java's default assignors (range, then cooperative-sticky: EAGER rebalances)"},
		{Name: "spring-kafka-consumer", Protocol: clients.Consumer, Assignor: "uniform",
			Doc: "a Spring Kafka listener container (AckMode BATCH), group.protocol=consumer (KIP-848), server assignor uniform"},
	}
}

// IsSpringKind says whether kind is one of SpringKinds.
func IsSpringKind(kind string) bool {
	return isProcessKind(SpringKinds(), kind)
}

// WithSpring returns r plus the Spring kinds among named, each running the
// Spring member on kafka-clients version (and the spring-kafka release
// java.SpringKafkaFor pairs with it), prepared by tc. Naming one on a
// machine without a JDK or Maven is an error that says what to install;
// naming none changes nothing.
func (r Registry) WithSpring(ctx context.Context, named []string, tc *java.Toolchain, version string) (Registry, error) {
	want := namedKinds(named, IsSpringKind)
	if len(want) == 0 {
		return r, nil
	}
	if _, err := java.SpringKafkaFor(version); err != nil {
		return nil, fmt.Errorf("member kinds %s: %w", strings.Join(want, ", "), err)
	}
	if err := java.CheckJava(); err != nil {
		return nil, fmt.Errorf("member kinds %s: %w", strings.Join(want, ", "), err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	rt, err := tc.PrepareSpring(ctx, version, "")
	if err != nil {
		return nil, fmt.Errorf("member kinds %s: %w", strings.Join(want, ", "), err)
	}
	return r.withCommand(SpringKinds(), want, rt.Command(java.JVMFlags)), nil
}
