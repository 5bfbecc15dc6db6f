package kinds

import (
	"strings"
	"testing"

	"github.com/groupquake/groupquake/clients"
)

// TestClassicMix pins which classic mixes a run refuses: those whose
// members share no assignor, where Kafka answers the odd member's every
// JoinGroup INCONSISTENT_GROUP_PROTOCOL (the scorecard group
// sarama-range,sarama-sticky,classic,kgo-classic, whose kgo-classic member
// never joined in 35 runs).
func TestClassicMix(t *testing.T) {
	for _, c := range []struct {
		kinds string
		odd   string // "" when the mix must be accepted
	}{
		{"sarama-range,sarama-sticky,classic,kgo-classic", "kgo-classic: no range"},
		{"confluent-python,kgo-classic", "no "},
		{"sarama-roundrobin,classic-cooperative", "no "},
		{"java-classic-cooperative,kafkago", "no "},
		{"sarama-range,sarama-sticky,classic", ""},
		{"sarama-range,sarama-sticky,classic,kafkago,java-classic,spring-kafka,confluent-python", ""},
		{"classic-cooperative,kgo-classic,java-classic-cooperative,classic,java-classic,spring-kafka,confluent-python-cooperative", ""},
		{"broken-classic-ignore-fence,kgo-classic", ""},
		{"sarama-range,consumer,kgo-consumer,java-consumer", ""}, // one classic kind: nothing to disagree with
		{"kgo-classic,kgo-classic", ""},
		{"sarama-range,mine", ""}, // a user's process kind: its offer is not known
	} {
		err := CheckClassicMix(strings.Split(c.kinds, ","))
		switch {
		case c.odd == "" && err != nil:
			t.Errorf("%s: refused: %v", c.kinds, err)
		case c.odd != "" && err == nil:
			t.Errorf("%s: accepted, but its classic members share no assignor", c.kinds)
		case c.odd != "" && (!strings.Contains(err.Error(), c.odd) || !strings.Contains(err.Error(), "INCONSISTENT_GROUP_PROTOCOL")):
			t.Errorf("%s: %v: want it to name the protocol error and %q", c.kinds, err, c.odd)
		}
	}
}

// TestEveryClassicKindOffers makes a new classic kind say what its
// JoinGroup offers: one without Offers would silently escape CheckClassicMix.
// It reads every kind a command line can name (All), so a new family is
// held without a line here.
func TestEveryClassicKindOffers(t *testing.T) {
	all := All()
	if len(all) <= len(Default()) {
		t.Fatalf("All has %d kinds, Default %d: the families are missing", len(all), len(Default()))
	}
	for name, f := range all {
		if _, ok := ClassicOffers(name); f.Protocol == clients.Classic && !ok {
			t.Errorf("classic kind %s says nothing of the assignors it offers (Factory.Offers)", name)
		}
	}
}
