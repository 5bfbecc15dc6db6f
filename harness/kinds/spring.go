package kinds

import (
	"context"
	"time"

	"github.com/groupquake/groupquake/clients"
	"github.com/groupquake/groupquake/clients/java"
	mproc "github.com/groupquake/groupquake/clients/process"
)

// SpringKinds are the member kinds of Spring Kafka: a listener container
// (clients/java/spring/SpringMember.java, one JVM per member) on the
// plan's kafka-clients, speaking the member protocol and committing on its
// own (AckMode BATCH). Like the Java kinds they are never in
// Default, so a seed never draws them; WithSpring adds the ones a
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

func init() { register(springFamily) }

// springFamily is the Spring kinds as a Family: each runs the Spring
// member on the plan's kafka-clients (Env.KafkaClients).
var springFamily = processFamily("the Spring Kafka listener-container kinds, which need a JDK and Maven (docs/spring-kafka.md)", SpringKinds,
	func(ctx context.Context, env Env) (mproc.Command, error) {
		if _, err := java.SpringKafkaFor(env.KafkaClients); err != nil {
			return mproc.Command{}, err
		}
		if err := java.CheckJava(); err != nil {
			return mproc.Command{}, err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		rt, err := env.toolchain().PrepareSpring(ctx, env.KafkaClients, "")
		if err != nil {
			return mproc.Command{}, err
		}
		return rt.Command(java.JVMFlags), nil
	})

// WithSpring returns r plus the Spring kinds among named, each running the
// Spring member on kafka-clients version (and the spring-kafka release
// java.SpringKafkaFor pairs with it), prepared by tc. Naming one on a
// machine without a JDK or Maven is an error that says what to install;
// naming none changes nothing.
func (r Registry) WithSpring(ctx context.Context, named []string, tc *java.Toolchain, version string) (Registry, error) {
	return r.withFamily(ctx, springFamily, named, Env{Toolchain: tc, KafkaClients: version})
}
