package wire

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// offsetsTopic is Kafka's internal topic for group records
// (Topic.GROUP_METADATA_TOPIC_NAME).
const offsetsTopic = "__consumer_offsets"

// topic is one topic: its id and its partitions' logs and producer state.
type topic struct {
	name       string
	id         [16]byte
	internal   bool
	partitions []*partition
}

// logFor is the log Fetch and ListOffsets read for partition p of t (nil:
// a topic the stand-in does not have), asked at currentLeaderEpoch, or the
// error they answer instead: UNKNOWN_TOPIC_OR_PARTITION for a partition it
// does not have, UNKNOWN_LEADER_EPOCH for an epoch above its leaders' 0.
func (t *topic) logFor(p, currentLeaderEpoch int32) (*partitionLog, *kerr.Error) {
	switch {
	case t == nil || p < 0 || int(p) >= len(t.partitions):
		return nil, kerr.UnknownTopicOrPartition
	case currentLeaderEpoch > 0:
		return nil, kerr.UnknownLeaderEpoch
	}
	return t.partitions[p].log, nil
}

type partition struct {
	log       *partitionLog
	producers producerStates
}

// topicByName reports a topic's id and partition count. With topicByID it
// is the view of the metadata image the coordinator reads (Topics).
func (s *Server) topicByName(name string) (id [16]byte, partitions int, ok bool) {
	t := s.topics[name]
	if t == nil {
		return [16]byte{}, 0, false
	}
	return t.id, len(t.partitions), true
}

// topicOf is the topic a produce or fetch request names: by id from
// version 13 on, by name before (nil when there is none).
func (s *Server) topicOf(version int16, name string, id [16]byte) *topic {
	if version >= 13 {
		return s.topicIDs[id]
	}
	return s.topics[name]
}

// topicByID reports a topic's name and partition count.
func (s *Server) topicByID(id [16]byte) (name string, partitions int, ok bool) {
	t := s.topicIDs[id]
	if t == nil {
		return "", 0, false
	}
	return t.name, len(t.partitions), true
}

// topicsView is the Topics the coordinator gets. Its methods read the
// server's maps without locking: the coordinator is only ever called with
// the server's lock held.
type topicsView struct{ s *Server }

func (v topicsView) TopicByName(name string) ([16]byte, int, bool) { return v.s.topicByName(name) }
func (v topicsView) TopicByID(id [16]byte) (string, int, bool)     { return v.s.topicByID(id) }

// TopicNames lists every topic, __consumer_offsets included, as a Kafka
// metadata image does: a regex subscription resolves against them
// (consumergroup.TopicLister).
func (v topicsView) TopicNames() []string {
	out := make([]string, 0, len(v.s.topics))
	for n := range v.s.topics {
		out = append(out, n)
	}
	return out
}

func newTopicID() ([16]byte, error) {
	var id [16]byte
	for id == ([16]byte{}) {
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("make a topic id: %w", err)
		}
	}
	return id, nil
}

// uuidString is Uuid.toString: URL-safe base64 without padding, as Kafka
// writes topic ids in partition.metadata and logs.
func uuidString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// validTopicName is Topic.validate: 1–249 characters of [a-zA-Z0-9._-],
// not "." or "..".
func validTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("Topic name is illegal, it can't be empty")
	case name == "." || name == "..":
		return errors.New("Topic name cannot be \".\" or \"..\"")
	case len(name) > 249:
		return fmt.Errorf("Topic name is illegal, it can't be longer than 249 characters, topic name: %s", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return nil
}

// partitionDir is Kafka's log directory name for a partition: topic-partition.
func (s *Server) partitionDir(name string, p int) string {
	if s.cfg.DataDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.DataDir, name+"-"+strconv.Itoa(p))
}

// createTopic makes a topic with n empty partitions and writes its
// partition.metadata files (PartitionMetadataFile: "version: 0" and the
// topic id), which is how Kafka's log directory remembers a topic's id.
func (s *Server) createTopic(name string, n int, internal bool) (*topic, error) {
	id, err := newTopicID()
	if err != nil {
		return nil, err
	}
	t := &topic{name: name, id: id, internal: internal}
	for p := 0; p < n; p++ {
		dir := s.partitionDir(name, p)
		if dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create topic %q: %w", name, err)
			}
			meta := "version: 0\ntopic_id: " + uuidString(id) + "\n"
			if err := os.WriteFile(filepath.Join(dir, "partition.metadata"), []byte(meta), 0o644); err != nil {
				return nil, fmt.Errorf("create topic %q: %w", name, err)
			}
		}
		l, err := openPartitionLog(dir, s.cfg.SyncWrites, s.logf)
		if err != nil {
			t.close()
			return nil, fmt.Errorf("create topic %q partition %d: %w", name, p, err)
		}
		t.partitions = append(t.partitions, &partition{log: l, producers: producerStates{}})
	}
	s.topics[name] = t
	s.topicIDs[id] = t
	return t, nil
}

// deleteTopic forgets a topic and removes its directories. Kafka renames
// them to topic-p.uuid-delete and removes them later; nothing reads them in
// between, so removing them at once is the same to a client.
func (s *Server) deleteTopic(t *topic) error {
	t.close()
	delete(s.topics, t.name)
	delete(s.topicIDs, t.id)
	var errs []error
	for p := range t.partitions {
		if dir := s.partitionDir(t.name, p); dir != "" {
			errs = append(errs, os.RemoveAll(dir))
		}
	}
	return errors.Join(errs...)
}

func (t *topic) close() error {
	var errs []error
	for _, p := range t.partitions {
		errs = append(errs, p.log.close())
	}
	return errors.Join(errs...)
}

// loadTopics reads every topic-partition directory under the data
// directory: the topic id from partition.metadata, the batches from the
// segment, the producer state from the batches (as Kafka rebuilds it from
// the log when it has no snapshot).
func (s *Server) loadTopics() error {
	if s.cfg.DataDir == "" {
		return nil
	}
	if err := os.MkdirAll(s.cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	entries, err := os.ReadDir(s.cfg.DataDir)
	if err != nil {
		return fmt.Errorf("read data directory: %w", err)
	}
	type found struct {
		id    [16]byte
		parts map[int]bool
	}
	byName := map[string]*found{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		i := strings.LastIndexByte(e.Name(), '-')
		if i <= 0 {
			continue
		}
		name, pstr := e.Name()[:i], e.Name()[i+1:]
		p, err := strconv.Atoi(pstr)
		if err != nil || p < 0 || validTopicName(name) != nil {
			continue
		}
		id, err := readPartitionMetadata(filepath.Join(s.cfg.DataDir, e.Name(), "partition.metadata"))
		if err != nil {
			return err
		}
		f := byName[name]
		if f == nil {
			f = &found{id: id, parts: map[int]bool{}}
			byName[name] = f
		}
		if f.id != id {
			return fmt.Errorf("data directory %s: partitions of topic %q carry different topic ids (%s and %s); remove the stale directories", s.cfg.DataDir, name, uuidString(f.id), uuidString(id))
		}
		f.parts[p] = true
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := byName[name]
		t := &topic{name: name, id: f.id, internal: name == offsetsTopic}
		for p := 0; p < len(f.parts); p++ {
			if !f.parts[p] {
				t.close()
				return fmt.Errorf("data directory %s: topic %q has %d partition directories but no %s-%d", s.cfg.DataDir, name, len(f.parts), name, p)
			}
			l, err := openPartitionLog(s.partitionDir(name, p), s.cfg.SyncWrites, s.logf)
			if err != nil {
				t.close()
				return fmt.Errorf("load %s-%d: %w", name, p, err)
			}
			part := &partition{log: l, producers: producerStates{}}
			for _, b := range l.batches {
				part.producers.rebuild(b)
				s.producerIDs.seen(producerIDOf(b.raw))
			}
			t.partitions = append(t.partitions, part)
		}
		s.topics[name] = t
		s.topicIDs[t.id] = t
	}
	return nil
}

func readPartitionMetadata(path string) ([16]byte, error) {
	var id [16]byte
	data, err := os.ReadFile(path)
	if err != nil {
		return id, fmt.Errorf("read topic id: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) != "topic_id" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(raw) != 16 {
			return id, fmt.Errorf("%s: topic_id %q is not a base64 UUID", path, strings.TrimSpace(v))
		}
		copy(id[:], raw)
		return id, nil
	}
	return id, fmt.Errorf("%s has no topic_id line", path)
}
