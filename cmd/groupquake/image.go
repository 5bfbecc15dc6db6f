package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/groupquake/groupquake/harness/cluster"
)

const imageUsage = `Usage: groupquake image build [flags]
       groupquake image list

build gets the Kafka image of each version ahead of a run (found, pulled or
built, then cached); list prints the served Kafka versions and which images
are cached. Run 'groupquake image build -h' for the flags of build.
`

const engineUsage = `Usage: groupquake engine up

Installs Debian's docker.io and starts dockerd when no Docker engine answers
(as root; log: /var/log/groupquake-dockerd.log), and prints the engine's
version.
`

// subcommand runs the subcommand of a command with subcommands (image,
// engine): help and a missing or unknown subcommand are answered here.
func subcommand(ctx context.Context, name, text string, subs map[string]func(context.Context, []string, io.Writer, io.Writer) error, args []string, stdout, stderr io.Writer) error {
	list := strings.Join(slices.Sorted(maps.Keys(subs)), " or ")
	if len(args) == 0 {
		return badInput("%s needs a subcommand: %s (see 'groupquake %s -h')", name, list, name)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, text)
		return errHelp
	}
	sub, ok := subs[args[0]]
	if !ok {
		return badInput("unknown %s subcommand %q: use %s (see 'groupquake %s -h')", name, args[0], list, name)
	}
	return sub(ctx, args[1:], stdout, stderr)
}

func cmdImage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return subcommand(ctx, "image", imageUsage, map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"build": cmdImageBuild, "list": cmdImageList,
	}, args, stdout, stderr)
}

func cmdEngine(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return subcommand(ctx, "engine", engineUsage, map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"up": cmdEngineUp,
	}, args, stdout, stderr)
}

func cmdEngineUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("engine up", engineUsage)
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	stopWatch := con.watch(ctx)
	defer stopWatch()
	v, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(con.Logf))
	if err != nil {
		return exitError{exitFailed, err.Error()}
	}
	fmt.Fprintln(stdout, v)
	return nil
}

const imageBuildUsage = `Usage: groupquake image build [flags]

Gets the Kafka image of each version: auto uses an apache/kafka:<version> image
already in the engine, else builds one locally (a Debian base with a JRE, the
broker jars of that exact version from Maven Central); official pulls it from
the engine's registry; build always builds. Built images are cached by tag.

Exit status: 0 every image is ready, 2 bad input, 3 no engine or a failed build.
`

func cmdImageBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image build", imageBuildUsage)
	versions := fs.String("kafka", cluster.DefaultKafkaVersion, "Kafka versions, comma-separated (served: "+strings.Join(cluster.KafkaVersions, ", ")+")")
	source := fs.String("image-source", "auto", "auto (a local apache/kafka image, else build), build, or official (pull apache/kafka)")
	rebuild := fs.Bool("rebuild", false, "build even when the image is cached")
	con, err := parseNoArgs(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	switch cluster.ImageSource(*source) {
	case cluster.SourceAuto, cluster.SourceBuild, cluster.SourceOfficial:
	default:
		return badInput("--image-source %q: use auto, build or official", *source)
	}
	var vs []string
	for _, v := range strings.Split(*versions, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return badInput("--kafka %q names an empty version: give versions separated by single commas, e.g. 4.1.2,4.4.0", *versions)
		}
		if err := cluster.CheckKafkaVersion(v); err != nil {
			return badInput("--kafka: %v (groupquake version lists them)", err)
		}
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	stopWatch := con.watch(ctx)
	defer stopWatch()
	if _, err := cluster.EnsureEngine(ctx, cluster.DefaultEngineOptions(con.Logf)); err != nil {
		return exitError{exitFailed, err.Error()}
	}
	for i, v := range vs {
		if len(vs) > 1 {
			con.Infof("image %d of %d: Kafka %s", i+1, len(vs), v)
		}
		img, err := cluster.EnsureImage(ctx, v, cluster.ImageOptions{Source: cluster.ImageSource(*source), Rebuild: *rebuild, Logf: con.Logf})
		if ierr := interrupted(ctx, "while getting the image of Kafka "+v+" (nothing of its build is left; the images built before are kept)"); ierr != nil {
			return ierr
		}
		if err != nil {
			return exitError{exitFailed, err.Error()}
		}
		state := "cached"
		if img.Built {
			state = fmt.Sprintf("built in %s", img.BuildTime.Round(1e9))
		}
		fmt.Fprintf(stdout, "%s\t%s\n", img.Ref, state)
	}
	return nil
}

const imageListUsage = `Usage: groupquake image list

Prints every served Kafka version (the default marked) and the images of it
that the Docker engine holds.
`

func cmdImageList(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("image list", imageListUsage)
	if err := parseNone(fs, args, stdout); err != nil {
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
