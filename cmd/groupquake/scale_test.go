package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestScaleBadInput: every wrong flag of scale is exit 2 with what was
// wrong, before any cluster is started.
func TestScaleBadInput(t *testing.T) {
	ok := []string{"scale", "--members", "10", "--protocol", "consumer", "--partitions", "4", "--embedded"}
	with := func(flag, v string) []string {
		out := append([]string(nil), ok...)
		for i := range out {
			if out[i] == flag {
				out[i+1] = v
				return out
			}
		}
		return append(out, flag, v)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scale"}, "scale needs --members and --protocol"},
		{with("--members", "1"), `--members "1": each size is a whole number of at least 2`},
		{with("--members", "10,x"), `--members "x"`},
		{with("--protocol", "eager"), `--protocol: unknown protocol "eager": use classic, consumer or share`},
		{[]string{"scale", "--members", "1001", "--protocol", "share", "--partitions", "4", "--embedded"}, "--members 1001 with --protocol share: Kafka caps a share group at 1000 members"},
		{append(with("--protocol", "share")[:len(ok)-1:len(ok)-1], "--kafka", "4.1.2"), "--protocol share on --kafka 4.1.2"},
		{[]string{"scale", "--members", "200,1001", "--protocol", "share", "--partitions", "4"}, "--members 1001 with --protocol share: Kafka caps a share group at 1000 members"},
		{with("--partitions", "-2"), "--partitions -2: the topic needs at least one partition"},
		{with("--bootstrap", "127.0.0.1:9092"), "--embedded and --bootstrap both given"},
		{append(ok[:len(ok)-1:len(ok)-1], "--nodes", "2"), "--nodes 2: a container cluster has 1 or 3 nodes"},
		{with("--conns", "-1"), "--conns -1: give the most connections the consumer members share, or 0 for 128"},
		{append(ok[:len(ok)-1:len(ok)-1], "--kafka", "4.1.2", "--consumer-assignment-interval", "1s"), "--consumer-assignment-interval: Kafka 4.1.2 has no group.consumer.assignment.interval.ms"},
		{append(ok[:len(ok)-1:len(ok)-1], "--consumer-assignment-interval", "-1s"), "--consumer-assignment-interval -1s: give 0"},
		{with("--heartbeat", "-1s"), "--heartbeat -1s: must be positive"},
		{with("--seed", "abc"), `--seed "abc": a seed is an unsigned whole number`},
		{append(ok, "extra"), "scale takes no arguments"},
	} {
		code, _, stderr := call(t, tc.args...)
		if code != exitBadInput || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d with %q", tc.args, code, stderr, exitBadInput, tc.want)
		}
	}
}

// TestScaleEmbeddedFreshClusterPerRun: on the embedded cluster each run
// gets a cluster of its own, so that a run's coordinator restart replays
// only its own group's records (the reference coordinator replays the
// whole log, and a collapsed consumer group of 10,000 left millions).
func TestScaleEmbeddedFreshClusterPerRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, []string{"scale", "--embedded", "--members", "2", "--protocol", "consumer,classic", "--partitions", "2",
		"--steady", "0", "--no-restart", "--seed", "1", "-v"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "embedded cluster: reference coordinator as Kafka"); n != 2 {
		t.Errorf("%d embedded clusters started for 2 runs, want 2:\n%s", n, stderr.String())
	}
}

// TestScaleShareGroupSize: the cluster scale starts admits the largest share
// group asked for (Kafka's group.share.max.size is 200 unless set), and
// leaves Kafka's default alone for smaller ones and for consumer groups.
func TestScaleShareGroupSize(t *testing.T) {
	for _, tc := range []struct {
		members, protocol, want string
	}{
		{"100,1000", "consumer,share", "1000"},
		{"250", "share", "250"},
		{"200", "share", ""},
		{"5000", "consumer", ""},
	} {
		var f scaleFlags
		fs := newFlagSet("scale", scaleUsage)
		f.register(fs)
		if err := fs.Parse([]string{"--members", tc.members, "--protocol", tc.protocol, "--partitions", "4", "--kafka", "4.4.0"}); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := f.check(given(fs)); err != nil {
			t.Fatalf("%s %s: %v", tc.members, tc.protocol, err)
		}
		if got := f.brokerSettings()["group.share.max.size"]; got != tc.want {
			t.Errorf("--members %s --protocol %s: group.share.max.size %q, want %q", tc.members, tc.protocol, got, tc.want)
		}
	}
}

// TestScaleShareEmbedded: scale --protocol share runs on the embedded
// cluster, with a group past Kafka's default group.share.max.size of 200
// (the embedded coordinator is given the size asked for, as the container
// cluster's brokers are), and reports it stable with every member and the
// backlog drained.
func TestScaleShareEmbedded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := runMain(ctx, []string{"scale", "--embedded", "--members", "201", "--protocol", "share", "--partitions", "2",
		"--share-records", "1000", "--stable-timeout", "1m", "--seed", "1", "--json"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	var doc scaleJSON
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	if len(doc.Share) != 1 || len(doc.Gave) > 0 {
		t.Fatalf("share reports %d, gave %q: want one run that reached a stable group", len(doc.Share), doc.Gave)
	}
	r := doc.Share[0]
	if r.Members != 201 || r.GroupEpoch < 1 || r.MinSharing < 1 || r.MaxSharing > 101 || r.Drained != 1000 {
		t.Errorf("report %+v: want 201 members stable, both partitions assigned (at most 101 members each), 1000 records drained", r)
	}
}
