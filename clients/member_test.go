package clients

import "testing"

func TestProtocolEpochs(t *testing.T) {
	for _, c := range []struct {
		p             Protocol
		gen, memEpoch int32
	}{
		{Classic, 7, -1},
		{Consumer, -1, 7},
	} {
		if g, m := c.p.Epochs(7); g != c.gen || m != c.memEpoch {
			t.Errorf("%s.Epochs(7) = generation %d, member epoch %d; want %d, %d", c.p, g, m, c.gen, c.memEpoch)
		}
	}
}
