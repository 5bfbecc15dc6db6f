package clients

import (
	"slices"
	"testing"
)

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

func TestPartitionsMinus(t *testing.T) {
	a := Partitions{"a": {3, 0, 1}, "b": {2}}
	got := a.Minus(Partitions{"a": {1}, "b": {2}, "c": {0}})
	if len(got) != 1 || !slices.Equal(got["a"], []int32{3, 0}) {
		t.Errorf("a − b = %v, want a:[3 0] (a's order, b dropped)", got)
	}
	if a.Count() != 4 {
		t.Errorf("Minus changed its receiver: %v", a)
	}
}

func TestPartitionsApply(t *testing.T) {
	p := Partitions{"a": {1, 3}, "b": {2}}
	p.Apply(Assigned, Partitions{"a": {2, 3, 0}, "c": {5}})
	if len(p) != 3 || !slices.Equal(p["a"], []int32{0, 1, 2, 3}) || !slices.Equal(p["c"], []int32{5}) {
		t.Fatalf("after assigning a:[2 3 0] c:[5]: %v, want a:[0 1 2 3] b:[2] c:[5]", p)
	}
	p.Apply(Revoked, Partitions{"a": {1, 7}, "b": {2}})
	if _, ok := p["b"]; ok || !slices.Equal(p["a"], []int32{0, 2, 3}) {
		t.Fatalf("after revoking a:[1 7] b:[2]: %v, want a:[0 2 3] c:[5] (b deleted)", p)
	}
	p.Apply(Lost, Partitions{"a": {0, 2, 3}})
	if len(p) != 1 || !slices.Equal(p["c"], []int32{5}) {
		t.Errorf("after losing all of a: %v, want c:[5]", p)
	}
}

func TestCheckAppAck(t *testing.T) {
	for _, a := range []int8{AckAccept, AckRelease, AckReject, AckRenew} {
		if err := CheckAppAck(a); err != nil {
			t.Errorf("%s refused: %v", AckName(a), err)
		}
	}
	for _, a := range []int8{AckGap, 5, -1} {
		if CheckAppAck(a) == nil {
			t.Errorf("acknowledge type %d accepted; an application sends only accept, release, reject and renew", a)
		}
	}
}
