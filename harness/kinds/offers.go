package kinds

import (
	"fmt"
	"slices"
	"strings"
)

// The classic assignors' protocol names as the clients put them in
// JoinGroup (Java's, librdkafka's, Sarama's, kafka-go's and kgo's agree).
const (
	assignRange      = "range"
	assignRoundRobin = "roundrobin"
	assignCoopSticky = "cooperative-sticky"
)

// javaDefaultOffers is the Java KafkaConsumer's default
// partition.assignment.strategy since Kafka 3.0: range, then
// cooperative-sticky.
var javaDefaultOffers = []string{assignRange, assignCoopSticky}

// ClassicOffers returns the assignors a classic member kind's JoinGroup
// offers, from every kind a command line can name (All: the default
// kinds and every family's), and whether the kind is known to offer any:
// false for a consumer-protocol or share kind and for a user's process
// kind, whose offer the harness cannot know.
func ClassicOffers(kind string) ([]string, bool) {
	if f, ok := All()[kind]; ok {
		return f.Offers, len(f.Offers) > 0
	}
	return nil, false
}

// CheckClassicMix refuses member kinds whose classic members have no
// assignor in common. Kafka's group coordinator admits a classic member
// only when some protocol it offers is offered by every other classic
// member of the group (GenericGroup.supportsProtocols, and for classic
// members of a consumer-protocol group ConsumerGroup.supportsClassicProtocols);
// it answers every other JoinGroup INCONSISTENT_GROUP_PROTOCOL, so such a
// member never joins: a run of that mix would judge the other members only.
// Kinds of the consumer protocol, and kinds whose offer is not known, are
// left out of the check.
func CheckClassicMix(kinds []string) error {
	var seen []string
	var common []string
	offers := map[string][]string{}
	for _, k := range kinds {
		o, ok := ClassicOffers(k)
		if !ok || slices.Contains(seen, k) {
			continue
		}
		seen = append(seen, k)
		offers[k] = o
		if len(seen) == 1 {
			common = slices.Clone(o)
			continue
		}
		common = slices.DeleteFunc(common, func(a string) bool { return !slices.Contains(o, a) })
	}
	if len(seen) < 2 || len(common) > 0 {
		return nil
	}
	var says []string
	for _, k := range seen {
		says = append(says, fmt.Sprintf("%s offers %s", k, strings.Join(offers[k], ", ")))
	}
	return fmt.Errorf("the classic member kinds %s share no assignor (%s): Kafka answers INCONSISTENT_GROUP_PROTOCOL to a JoinGroup that offers no assignor every other member offers, so some members would never join%s; name kinds that share one, e.g. classic-cooperative,kgo-classic,java-classic-cooperative (cooperative-sticky) or sarama-range,sarama-sticky,classic,java-classic (range)",
		strings.Join(seen, ", "), strings.Join(says, "; "), odd(seen, offers))
}

// odd names the kinds whose offer has nothing in common with the
// assignor most of the others offer (", kgo-classic offers no range").
func odd(kinds []string, offers map[string][]string) string {
	count := map[string]int{}
	for _, k := range kinds {
		for _, a := range offers[k] {
			count[a]++
		}
	}
	best := ""
	for _, k := range kinds { // the most offered assignor; ties go to the first kind's preference
		for _, a := range offers[k] {
			if count[a] > count[best] {
				best = a
			}
		}
	}
	var out []string
	for _, k := range kinds {
		if !slices.Contains(offers[k], best) {
			out = append(out, k)
		}
	}
	return fmt.Sprintf(" (%s: no %s)", strings.Join(out, ", "), best)
}
