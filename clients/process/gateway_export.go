package process

import "github.com/groupquake/groupquake/clients/wiretap"

// Gateway is the member gateway (see gateway) for a member process that
// does not speak the member protocol: clients/java's share member, whose
// JVM runs Kafka's KafkaShareConsumer. The process connects only to the
// gateway's listeners; every connection is dialed onward with dial (the
// member's links, observed).
type Gateway struct{ g *gateway }

// NewGateway returns a gateway that dials the brokers with dial.
func NewGateway(dial wiretap.DialFunc) *Gateway { return &Gateway{g: newGateway(dial)} }

// Listen returns the gateway's address for broker (host:port), listening
// on it first if needed: the process's bootstrap address for it.
func (g *Gateway) Listen(broker string) (string, error) { return g.g.listen(broker) }

// ListenAll listens for every seed broker: the process's bootstrap
// addresses, in seeds' order.
func (g *Gateway) ListenAll(seeds []string) ([]string, error) { return g.g.listenAll(seeds) }

// Hold stops (on) or lets go (off) every byte the gateway carries.
func (g *Gateway) Hold(on bool) { g.g.hold(on) }

// Cut closes every connection and refuses new ones for good.
func (g *Gateway) Cut() { g.g.cutLinks() }

// Close stops listening and cuts every connection.
func (g *Gateway) Close() { g.g.close() }
