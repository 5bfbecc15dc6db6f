package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/groupquake/groupquake/harness/cluster"
)

// runFlags are the flags of `groupquake run`.
type runFlags struct {
	version     string
	nodes       int
	controllers int
	bootstrap   string
	nodeControl string
	toxiproxy   string
	basePort    int
	imageSource string
	records     int
	partitions  int
	members     int
	topic       string
	group       string
	bound       time.Duration
	keep        bool
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.version, "kafka", cluster.DefaultKafkaVersion, "Kafka version of the container cluster (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	fs.IntVar(&f.nodes, "nodes", 3, "broker nodes: 1 or 3")
	fs.IntVar(&f.controllers, "controllers", 0, "separate controller nodes: 0, 1 or 3")
	fs.StringVar(&f.bootstrap, "bootstrap", "", "host:port[,host:port] of an external cluster to use instead of containers")
	fs.StringVar(&f.nodeControl, "node-control", "", "external cluster: command template for node faults, e.g. 'ssh {{.Host}} sudo systemctl {{.Action}} kafka'")
	fs.StringVar(&f.toxiproxy, "toxiproxy", "", "API address of an external toxiproxy (default: embedded)")
	fs.IntVar(&f.basePort, "base-port", 0, "loopback port of the first broker (0: free ports)")
	fs.StringVar(&f.imageSource, "image-source", "auto", "auto, build or official")
	fs.IntVar(&f.records, "records", 100000, "records to produce")
	fs.IntVar(&f.partitions, "partitions", 6, "partitions of the workload topic")
	fs.IntVar(&f.members, "members", 3, "consumer group members")
	fs.StringVar(&f.topic, "topic", "groupquake-workload", "workload topic")
	fs.StringVar(&f.group, "group", "groupquake-workload", "workload consumer group")
	fs.DurationVar(&f.bound, "bound", 5*time.Minute, "how long the workload may take before the run fails")
	fs.BoolVar(&f.keep, "keep", false, "keep the container cluster running after the run (remove it later with `groupquake sweep --all`)")
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitError{2, fmt.Sprintf("run takes no arguments, got %q", fs.Args())}
	}
	if f.records < 1 || f.partitions < 1 || f.members < 1 {
		return exitError{2, "--records, --partitions and --members must be at least 1"}
	}
	logf := logTo(stderr)
	fmt.Fprintf(stderr, "groupquake: rerun with: groupquake run %s\n", strings.Join(args, " "))

	var h cluster.Handle
	if f.bootstrap != "" {
		e, err := cluster.Connect(ctx, cluster.ExternalConfig{Bootstrap: strings.Split(f.bootstrap, ","), NodeControl: f.nodeControl, Toxiproxy: f.toxiproxy, Logf: logf})
		if err != nil {
			return err
		}
		h = e
	} else {
		if err := cluster.CheckKafkaVersion(f.version); err != nil {
			return exitError{2, err.Error()}
		}
		if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logf)); err != nil {
			return err
		}
		c, err := cluster.Start(ctx, cluster.Config{
			Version: f.version, Nodes: f.nodes, Controllers: f.controllers, BasePort: f.basePort,
			Toxiproxy: f.toxiproxy, Image: cluster.ImageOptions{Source: cluster.ImageSource(f.imageSource)}, Logf: logf,
		})
		if err != nil {
			return err
		}
		h = c
	}
	defer func() {
		if c, ok := h.(*cluster.Cluster); ok && f.keep {
			logf("cluster %s kept running: brokers %s", c.RunID, strings.Join(c.Bootstrap(), ","))
			return
		}
		if err := h.Close(context.WithoutCancel(ctx)); err != nil {
			logf("teardown: %v", err)
		}
	}()
	res, err := pushWorkload(ctx, h, f, logf)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "produced %d records in %s (%.0f/s); consumed %d distinct records with %d members in %s; duplicates %d; missing %d\n",
		res.produced, res.produceTime.Round(time.Millisecond), float64(res.produced)/res.produceTime.Seconds(),
		res.consumed, f.members, res.consumeTime.Round(time.Millisecond), res.duplicates, res.missing)
	if res.missing > 0 {
		return exitError{1, fmt.Sprintf("%d acknowledged records were never consumed", res.missing)}
	}
	return nil
}

type workloadResult struct {
	produced, consumed, duplicates, missing int
	produceTime, consumeTime                time.Duration
}

// pushWorkload produces sequence-numbered records (acks=all, idempotent)
// through a producer's own links and consumes them with a group whose
// members each have their own links, until every acknowledged record has
// been seen or the bound passes.
func pushWorkload(ctx context.Context, h cluster.Handle, f runFlags, logf func(string, ...any)) (workloadResult, error) {
	var res workloadResult
	adm, err := h.Admin()
	if err != nil {
		return res, err
	}
	rf := int16(min(len(h.Bootstrap()), 3))
	if r, err := adm.CreateTopic(ctx, int32(f.partitions), rf, nil, f.topic); err != nil || (r.Err != nil && !strings.Contains(r.Err.Error(), "TOPIC_ALREADY_EXISTS")) {
		adm.Close()
		if err == nil {
			err = r.Err
		}
		return res, fmt.Errorf("create topic %s: %v", f.topic, err)
	}
	adm.Close()
	ctx, cancel := context.WithTimeout(ctx, f.bound)
	defer cancel()

	pl, err := h.Links("producer")
	if err != nil {
		return res, err
	}
	prod, err := kgo.NewClient(append(pl.KgoOpts(), kgo.DefaultProduceTopic(f.topic), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	if err != nil {
		return res, err
	}
	start := time.Now()
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	acked := make([]bool, f.records)
	for i := range f.records {
		wg.Add(1)
		prod.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % f.partitions)), Value: []byte(strconv.Itoa(i))}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			acked[i] = true
		})
	}
	wg.Wait()
	prod.Close()
	res.produceTime = time.Since(start)
	res.produced = f.records - int(failed.Load())
	if n := failed.Load(); n > 0 {
		logf("workload: %d records were not acknowledged (first error: %v)", n, firstErr.Load())
	}

	start = time.Now()
	var mu sync.Mutex
	seen := make([]int, f.records)
	distinct := 0
	done := make(chan struct{})
	var closeOnce sync.Once
	errs := make(chan error, f.members)
	for m := range f.members {
		l, err := h.Links(fmt.Sprintf("member-%d", m))
		if err != nil {
			return res, err
		}
		cl, err := kgo.NewClient(append(l.KgoOpts(), kgo.ConsumerGroup(f.group), kgo.ConsumeTopics(f.topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
		if err != nil {
			return res, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.Close()
			for {
				select {
				case <-done:
					return
				default:
				}
				fetches := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					return
				}
				var bad error
				fetches.EachRecord(func(r *kgo.Record) {
					i, err := strconv.Atoi(string(r.Value))
					if err != nil || i < 0 || i >= f.records {
						bad = fmt.Errorf("record %q at %s/%d@%d was not produced by this run", r.Value, r.Topic, r.Partition, r.Offset)
						return
					}
					mu.Lock()
					seen[i]++
					if seen[i] == 1 && acked[i] {
						distinct++
						if distinct == res.produced {
							closeOnce.Do(func() { close(done) })
						}
					}
					mu.Unlock()
				})
				if bad != nil {
					errs <- bad
					closeOnce.Do(func() { close(done) })
					return
				}
			}
		}()
	}
	wg.Wait()
	res.consumeTime = time.Since(start)
	select {
	case err := <-errs:
		return res, err
	default:
	}
	for i, n := range seen {
		if acked[i] && n == 0 {
			res.missing++
		}
		if n > 1 {
			res.duplicates += n - 1
		}
	}
	res.consumed = distinct
	if res.missing > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		logf("workload: bound --bound=%s exceeded with %d of %d acknowledged records consumed", f.bound, distinct, res.produced)
	}
	return res, nil
}

func cmdSweep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	all := fs.Bool("all", false, "remove every groupquake container and network, also those of runs still alive")
	if err := fs.Parse(args); err != nil {
		return err
	}
	n, err := cluster.Sweep(ctx, *all)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d containers and networks\n", n)
	return nil
}
