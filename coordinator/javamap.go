package coordinator

import (
	"slices"

	"github.com/groupquake/groupquake/coordinator/assignor"
)

// javaMap is a map with string keys that iterates in the order of
// java.util.HashMap<String, V> created with `new HashMap<>()` and given the
// same puts and removes. ClassicGroup keeps its members in such a map, and
// that order is visible: it picks the next leader when the leader leaves
// (ClassicGroup.remove), elects a joined leader (maybeElectNewJoinedLeader),
// breaks ties in protocol selection (selectProtocol) and orders the members
// of the leader's JoinGroup response and of every GroupMetadataValue record.
//
// A HashMap iterates its table from bucket 0 up and, within a bucket, in
// insertion order; resizing splits buckets without reordering them and the
// table never shrinks. So the order is the insertion order stably sorted by
// spread(hashCode) & (table-1), with table the largest size the map grew to.
// Not reproduced: treeified bins (8+ keys in one bucket of a 64+ table).
//
// Invariants: keys holds every key of vals exactly once, in insertion order;
// table is a power of two ≥ 16 and never shrinks.
type javaMap[V any] struct {
	keys  []string
	vals  map[string]V
	table int
}

func newJavaMap[V any]() *javaMap[V] {
	return &javaMap[V]{vals: map[string]V{}, table: 16}
}

func (m *javaMap[V]) len() int { return len(m.keys) }

func (m *javaMap[V]) get(k string) (V, bool) {
	v, ok := m.vals[k]
	return v, ok
}

func (m *javaMap[V]) has(k string) bool {
	_, ok := m.vals[k]
	return ok
}

// put adds or replaces k; a replaced key keeps its place.
func (m *javaMap[V]) put(k string, v V) {
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
		for len(m.keys) > m.table*3/4 {
			m.table *= 2
		}
	}
	m.vals[k] = v
}

func (m *javaMap[V]) remove(k string) (V, bool) {
	v, ok := m.vals[k]
	if !ok {
		return v, false
	}
	delete(m.vals, k)
	m.keys = slices.DeleteFunc(m.keys, func(x string) bool { return x == k })
	return v, true
}

// ordered returns the keys in HashMap iteration order.
func (m *javaMap[V]) ordered() []string {
	out := slices.Clone(m.keys)
	mask := int32(m.table - 1)
	slices.SortStableFunc(out, func(a, b string) int {
		return int(assignor.JavaKeyHash(a)&mask) - int(assignor.JavaKeyHash(b)&mask)
	})
	return out
}

// first returns the first key in iteration order.
func (m *javaMap[V]) first() (string, bool) {
	o := m.ordered()
	if len(o) == 0 {
		return "", false
	}
	return o[0], true
}
