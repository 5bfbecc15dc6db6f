package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/groupquake/groupquake/harness/cluster"
)

func cmdEngineUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("engine up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	v, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logTo(stderr)))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, v)
	return nil
}

func cmdImageBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	versions := fs.String("kafka", cluster.DefaultKafkaVersion, "Kafka versions, comma-separated (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	source := fs.String("image-source", "auto", "auto (a local apache/kafka image, else build), build, or official (pull apache/kafka)")
	rebuild := fs.Bool("rebuild", false, "build even when the image is cached")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var vs []string
	for _, v := range strings.Split(*versions, ",") {
		v = strings.TrimSpace(v)
		if err := cluster.CheckKafkaVersion(v); err != nil {
			return err
		}
		vs = append(vs, v)
	}
	if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(logTo(stderr))); err != nil {
		return err
	}
	for _, v := range vs {
		img, err := cluster.EnsureImage(ctx, v, cluster.ImageOptions{Source: cluster.ImageSource(*source), Rebuild: *rebuild, Logf: logTo(stderr)})
		if err != nil {
			return err
		}
		state := "cached"
		if img.Built {
			state = fmt.Sprintf("built in %s", img.BuildTime.Round(1e9))
		}
		fmt.Fprintf(stdout, "%s\t%s\n", img.Ref, state)
	}
	return nil
}

func cmdImageList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cached, err := cluster.CachedImages(ctx)
	if err != nil {
		return err
	}
	for _, v := range cluster.KafkaVersions {
		mark := ""
		if v == cluster.DefaultKafkaVersion {
			mark = " (default)"
		}
		fmt.Fprintf(stdout, "%s%s\t%s\n", v, mark, strings.Join(cached[v], " "))
	}
	return nil
}
