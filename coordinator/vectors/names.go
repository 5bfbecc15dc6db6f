package vectors

import (
	"fmt"
	"strconv"
	"strings"
)

// Names maps the names a vector writes to the names one side uses in its
// requests.
type Names interface {
	Group(string) string
	Topic(string) string
	// TopicID is the id of the topic the vector names.
	TopicID(string) [16]byte
	Member(string) string
	// Regex is a SubscribedTopicRegex that matches the topics the vector's
	// regex matches, as Topic names them; "" stays "" (no regex).
	Regex(string) string
}

// Norm maps what one side answered back to the names the vector writes.
type Norm interface {
	Member(string) string
	Group(string) string
	Topic(string) string
	// TopicName is the vector's name of the topic with this id.
	TopicName([16]byte) string
	// Text is an error message, which may quote names.
	Text(string) string
	Host(string) string
}

// Identity takes names as written, with topic ids made by TopicID. It is
// the coordinator test harness's side and the differential reference's.
type Identity struct{}

func (Identity) Group(s string) string        { return s }
func (Identity) Topic(s string) string        { return s }
func (Identity) TopicID(s string) [16]byte    { return TopicID(s) }
func (Identity) Member(s string) string       { return s }
func (Identity) Regex(s string) string        { return s }
func (Identity) TopicName(id [16]byte) string { return TopicName(id) }
func (Identity) Text(s string) string         { return s }
func (Identity) Host(s string) string         { return s }

// ShortIDs is the coordinator.IDSource of the side that takes names as
// written (the coordinator test harness, the differential reference): the
// random part of each member id is a count, "1", "2", …, short enough to
// read in a vector.
type ShortIDs struct{ n int }

// NewID returns the next count.
func (s *ShortIDs) NewID() string { s.n++; return strconv.Itoa(s.n) }

// TopicID is the id the vectors give a topic: "T" and the name, padded
// with zeros, so that an id in an answer reads back as its name.
func TopicID(name string) [16]byte {
	var id [16]byte
	id[0] = 'T'
	copy(id[1:], name)
	return id
}

// TopicName reverses TopicID; any other id is rendered in hex.
func TopicName(id [16]byte) string {
	if id[0] == 'T' {
		return strings.TrimRight(string(id[1:]), "\x00")
	}
	return fmt.Sprintf("%x", id)
}
