package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/moby/moby/client"

	"github.com/groupquake/groupquake/coordinator/version"
	"github.com/groupquake/groupquake/internal/interrupt"
	"github.com/groupquake/groupquake/internal/javatool"
	"github.com/groupquake/groupquake/internal/progress"
)

//go:embed imagefiles
var imageFiles embed.FS

// KafkaVersions are the Apache Kafka versions groupquake serves images for
// (coordinator/version keeps the list): each resolves its broker jars from
// Maven Central and runs the same KAFKA_* environment as the official image.
var KafkaVersions = servedVersions()

func servedVersions() []string {
	var out []string
	for _, v := range version.Served() {
		out = append(out, v.String())
	}
	return out
}

// DefaultKafkaVersion is the version used when none is named.
var DefaultKafkaVersion = version.Default.String()

// log4jVersion is added to the broker's jars: Kafka's POM leaves its log4j2
// runtime out (libraries-and-runtime note §5).
const log4jVersion = "2.25.3"

// CheckKafkaVersion returns an error naming the served versions when v is not one.
func CheckKafkaVersion(v string) error {
	p, err := version.Parse(v)
	if err != nil {
		return err
	}
	if p.String() != v {
		return fmt.Errorf("Kafka version %q: write it as %s", v, p)
	}
	return nil
}

// ImageSource says where a Kafka image comes from.
type ImageSource string

const (
	// SourceAuto uses an official apache/kafka image already in the engine,
	// else builds one locally. It never contacts a registry, so it behaves the
	// same on a closed network.
	SourceAuto ImageSource = "auto"
	// SourceBuild always uses the locally built image.
	SourceBuild ImageSource = "build"
	// SourceOfficial pulls apache/kafka:<version> from the registry the
	// engine is configured with.
	SourceOfficial ImageSource = "official"
)

// ImageOptions configure EnsureImage.
type ImageOptions struct {
	Source ImageSource
	// Rebuild builds even when the image is cached.
	Rebuild bool
	// RebuildBase also rebuilds the JRE base image (debootstrap).
	RebuildBase bool
	// MavenArgs are extra arguments for mvn (for example -o, or -s FILE).
	MavenArgs []string
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
}

// Image is a Kafka image ready to run.
type Image struct {
	Ref      string
	Version  string
	Official bool
	// Built is true when this call built the image (false: it was cached).
	Built bool
	// BuildTime is how long building took, base image included.
	BuildTime time.Duration
}

// BuiltImageRef is the tag of groupquake's locally built image of a version.
func BuiltImageRef(version string) string { return "groupquake/kafka:" + version }

// OfficialImageRef is the tag of the official image of a version.
func OfficialImageRef(version string) string { return "apache/kafka:" + version }

// EnsureImage returns an image of Kafka version, building it when it is not
// cached. A failed build leaves no image and no partial jar directory behind.
func EnsureImage(ctx context.Context, version string, o ImageOptions) (Image, error) {
	if err := CheckKafkaVersion(version); err != nil {
		return Image{}, err
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return Image{}, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return Image{}, fmt.Errorf("%w at %s: %v; run `groupquake engine up` (root) to install and start one", ErrNoEngine, cli.DaemonHost(), err)
	}
	switch o.Source {
	case SourceOfficial:
		ref := OfficialImageRef(version)
		if !o.Rebuild && imageExists(ctx, cli, ref) {
			return Image{Ref: ref, Version: version, Official: true}, nil
		}
		logf("image: pulling %s", ref)
		rc, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
		if err != nil {
			return Image{}, fmt.Errorf("pull %s: %v; without a registry use --image-source build", ref, err)
		}
		defer rc.Close()
		layers := &progress.Counter{Step: "image: pulling " + ref, Units: "layers pulled", Logf: logf, Unit: func(l string) bool { return l == "Pull complete" }}
		err = drainJSONStream(rc, nil, func(m string) { fmt.Fprintln(layers, m) })
		layers.Done()
		if err != nil {
			return Image{}, fmt.Errorf("pull %s: %v; without a registry use --image-source build", ref, err)
		}
		return Image{Ref: ref, Version: version, Official: true, Built: true}, nil
	case SourceAuto, "":
		if ref := OfficialImageRef(version); !o.Rebuild && imageExists(ctx, cli, ref) {
			return Image{Ref: ref, Version: version, Official: true}, nil
		}
	case SourceBuild:
	default:
		return Image{}, fmt.Errorf("unknown image source %q: use auto, build or official", o.Source)
	}
	ref := BuiltImageRef(version)
	if !o.Rebuild && imageExists(ctx, cli, ref) {
		if got := imageLabel(ctx, cli, ref, LabelBuild); got == buildHash() {
			return Image{Ref: ref, Version: version}, nil
		}
		logf("image: %s was built from other image files than this groupquake's; rebuilding it", ref)
	}
	start := time.Now()
	// The jars first: resolving them fails in seconds when Maven Central is
	// out of reach, before a base image build of minutes, and on any host
	// (the base image needs Debian).
	libs, err := resolveBrokerJars(ctx, version, o.MavenArgs, logf)
	if err != nil {
		return Image{}, err
	}
	base, err := ensureBaseImage(ctx, cli, o.RebuildBase, logf)
	if err != nil {
		return Image{}, err
	}
	logf("image: building %s from %s and %d jars", ref, base, len(libs.jars))
	if err := buildKafkaImage(ctx, cli, ref, base, version, libs, logf); err != nil {
		return Image{}, err
	}
	d := time.Since(start)
	logf("image: %s built in %s", ref, d.Round(time.Second))
	return Image{Ref: ref, Version: version, Built: true, BuildTime: d}, nil
}

// LabelBuild carries the hash of the files an image was built from, so a
// changed entrypoint or log4j version rebuilds cached images.
const LabelBuild = "io.groupquake.build"

// buildHash digests the embedded image files and the added log4j version.
func buildHash() string {
	h := sha256.New()
	fs.WalkDir(imageFiles, "imagefiles", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := imageFiles.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return nil
	})
	io.WriteString(h, log4jVersion)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func imageLabel(ctx context.Context, cli *client.Client, ref, label string) string {
	res, err := cli.ImageInspect(ctx, ref)
	if err != nil || res.Config == nil {
		return ""
	}
	return res.Config.Labels[label]
}

func imageExists(ctx context.Context, cli *client.Client, ref string) bool {
	_, err := cli.ImageInspect(ctx, ref)
	return err == nil
}

// baseImageRef names the JRE base for this machine's Debian release.
func baseImageRef(codename string) string { return "groupquake/jre:" + codename }

// jrePackages maps a Debian release to its JRE package; Kafka 4.x needs Java 17+.
var jrePackages = map[string]string{
	"bookworm": "openjdk-17-jre-headless",
	"trixie":   "openjdk-21-jre-headless",
}

// ensureBaseImage makes a Debian image with a JRE without any registry:
// debootstrap a minimal root file system from the machine's own apt mirror,
// then `docker import` it.
func ensureBaseImage(ctx context.Context, cli *client.Client, rebuild bool, logf func(string, ...any)) (string, error) {
	codename, err := hostCodename()
	if err != nil {
		return "", err
	}
	ref := baseImageRef(codename)
	if !rebuild && imageExists(ctx, cli, ref) {
		return ref, nil
	}
	jre, ok := jrePackages[codename]
	if !ok {
		return "", fmt.Errorf("cannot build a JRE base image on Debian %q: supported releases are bookworm and trixie; use --image-source official with a registry", codename)
	}
	mirror, err := aptMirror(codename)
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if os.Geteuid() != 0 {
			return "", errors.New("building the JRE base image needs debootstrap and root: run `sudo groupquake image build`")
		}
		logf("image: installing debootstrap with apt-get")
		if out, err := runQuiet(ctx, "apt-get", "update", "-q"); err != nil {
			return "", fmt.Errorf("apt-get update: %v\n%s", err, tail(out, 15))
		}
		if out, err := runQuiet(ctx, "apt-get", "install", "-y", "-q", "debootstrap"); err != nil {
			return "", fmt.Errorf("apt-get install debootstrap: %v\n%s", err, tail(out, 15))
		}
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	rootfs := filepath.Join(cache, "rootfs-"+codename+".partial")
	// A debootstrap that was killed may have left the host's /proc and
	// /sys mounted in it: RemoveTree detaches them before it removes.
	if err := interrupt.RemoveTree(rootfs); err != nil {
		return "", err
	}
	interrupt.Track(rootfs)
	defer interrupt.RemoveTemp(rootfs)
	if err := os.MkdirAll(filepath.Dir(rootfs), 0o755); err != nil {
		return "", err
	}
	logf("image: building base %s: debootstrap %s with %s from %s (one time, about a minute)", ref, codename, jre, mirror)
	start := time.Now()
	var output bytes.Buffer
	fetched := &progress.Counter{Step: "image: debootstrap " + codename, Units: "packages retrieved", Logf: logf,
		Unit: func(l string) bool { return strings.HasPrefix(l, "I: Retrieving ") }}
	configured := &progress.Counter{Step: "image: debootstrap " + codename, Units: "packages configured", Logf: logf,
		Unit: func(l string) bool { return strings.HasPrefix(l, "I: Configuring ") }}
	// In a process group of its own, interrupted with SIGINT: debootstrap
	// then unmounts what it mounted in the root (its INT trap).
	deb := interrupt.Command(ctx, "debootstrap", "--variant=minbase", "--include="+jre, codename, rootfs, mirror)
	deb.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	deb.Stdout = io.MultiWriter(&output, fetched, configured)
	deb.Stderr = deb.Stdout
	err = interrupt.Run(deb)
	fetched.Done()
	configured.Done()
	out := output.Bytes()
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("debootstrap %s: %w", codename, context.Cause(ctx))
	}
	if err != nil {
		return "", fmt.Errorf("debootstrap %s from %s failed: %v\n%s", codename, mirror, err, tail(out, 15))
	}
	for _, p := range []string{"var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/info"} {
		os.RemoveAll(filepath.Join(rootfs, p))
	}
	tarCmd := interrupt.Command(ctx, "tar", "--numeric-owner", "-C", rootfs, "-c", ".")
	stdout, err := tarCmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var tarErr bytes.Buffer
	tarCmd.Stderr = &tarErr
	if err := interrupt.Start(tarCmd); err != nil {
		return "", fmt.Errorf("tar %s: %v", rootfs, err)
	}
	rc, err := cli.ImageImport(ctx, client.ImageImportSource{Source: stdout, SourceName: "-"}, ref, client.ImageImportOptions{
		Changes: []string{
			"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"ENV LANG=C.UTF-8",
			"LABEL io.groupquake.image=jre",
		},
	})
	if err != nil {
		interrupt.Kill(tarCmd)
		interrupt.Wait(tarCmd)
		return "", fmt.Errorf("docker import %s: %v", ref, err)
	}
	ierr := drainJSONStream(rc, nil, nil)
	rc.Close()
	if werr := interrupt.Wait(tarCmd); werr != nil {
		return "", fmt.Errorf("tar %s: %v: %s", rootfs, werr, tarErr.String())
	}
	if ierr != nil {
		return "", fmt.Errorf("docker import %s: %v", ref, ierr)
	}
	logf("image: base %s ready in %s", ref, time.Since(start).Round(time.Second))
	return ref, nil
}

// hostCodename reads VERSION_CODENAME from /etc/os-release.
func hostCodename() (string, error) {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "", fmt.Errorf("cannot tell the Debian release to build a JRE base image: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VERSION_CODENAME="); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", errors.New("cannot tell the Debian release: /etc/os-release has no VERSION_CODENAME")
}

// aptMirror returns the archive URI the machine's own apt sources use for
// codename's main component: the base image is built from the same mirror,
// never from a host named anywhere else.
func aptMirror(codename string) (string, error) {
	var files []string
	files = append(files, "/etc/apt/sources.list")
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	files = append(files, more...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var uri string
		if strings.HasSuffix(f, ".sources") {
			uri = mirrorFromDeb822(string(b), codename)
		} else {
			uri = mirrorFromList(string(b), codename)
		}
		if uri != "" {
			return uri, nil
		}
	}
	return "", fmt.Errorf("no apt source for Debian %s main found in /etc/apt/sources.list or /etc/apt/sources.list.d: add one, or use --image-source official with a registry", codename)
}

// mirrorFromList parses one-line-style apt sources ("deb URI suite comps").
func mirrorFromList(text, codename string) string {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "deb" {
			continue
		}
		i := 1
		if strings.HasPrefix(f[i], "[") { // options like [arch=amd64 signed-by=...]
			for i < len(f) && !strings.HasSuffix(f[i], "]") {
				i++
			}
			i++
		}
		if i+2 >= len(f) {
			continue
		}
		if f[i+1] == codename && slices.Contains(f[i+2:], "main") {
			return f[i]
		}
	}
	return ""
}

// mirrorFromDeb822 parses deb822 stanzas (Types/URIs/Suites/Components).
func mirrorFromDeb822(text, codename string) string {
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				continue
			}
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if !slices.Contains(strings.Fields(fields["types"]), "deb") {
			continue
		}
		if !slices.Contains(strings.Fields(fields["suites"]), codename) || !slices.Contains(strings.Fields(fields["components"]), "main") {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}

type brokerJars struct {
	dir  string
	jars []string
}

// resolveBrokerJars resolves the broker's runtime jars for version with
// Maven into the cache. The jar directory appears only when resolution
// succeeded, so an interrupted or failed build leaves nothing half-made.
func resolveBrokerJars(ctx context.Context, version string, mavenArgs []string, logf func(string, ...any)) (brokerJars, error) {
	cache, err := cacheDir()
	if err != nil {
		return brokerJars{}, err
	}
	dir := filepath.Join(cache, "kafka", version, "libs")
	if jars, err := filepath.Glob(filepath.Join(dir, "*.jar")); err == nil && len(jars) > 0 && slices.ContainsFunc(jars, func(j string) bool {
		return filepath.Base(j) == "kafka_2.13-"+version+".jar"
	}) {
		return brokerJars{dir: dir, jars: jars}, nil
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return brokerJars{}, errors.New("building a Kafka image needs Maven (mvn) to resolve the broker jars: apt-get install maven, or use --image-source official with a registry")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return brokerJars{}, err
	}
	work, err := interrupt.MkdirTemp(filepath.Dir(dir), "resolve-")
	if err != nil {
		return brokerJars{}, err
	}
	defer interrupt.RemoveTemp(work)
	tmpl, err := template.ParseFS(imageFiles, "imagefiles/pom.xml.tmpl")
	if err != nil {
		return brokerJars{}, err
	}
	var pom bytes.Buffer
	if err := tmpl.Execute(&pom, map[string]string{"Version": version, "Log4j": log4jVersion}); err != nil {
		return brokerJars{}, err
	}
	if err := os.WriteFile(filepath.Join(work, "pom.xml"), pom.Bytes(), 0o644); err != nil {
		return brokerJars{}, err
	}
	logf("image: resolving Kafka %s broker jars with Maven (the machine's Maven settings apply)", version)
	mvn := javatool.Maven{Args: mavenArgs, Logf: logf}
	out, err := mvn.CopyDependencies(ctx, work, fmt.Sprintf("image: resolving Kafka %s broker jars", version))
	if err != nil {
		if ctx.Err() != nil {
			return brokerJars{}, fmt.Errorf("resolving Kafka %s broker jars with Maven: %w", version, context.Cause(ctx))
		}
		return brokerJars{}, fmt.Errorf("resolve Kafka %s broker jars with Maven failed (is Maven Central, or the mirror in your Maven settings, reachable?): %v\n%s", version, err, tail(out, 12))
	}
	jars, _ := filepath.Glob(filepath.Join(work, "libs", "*.jar"))
	if !slices.ContainsFunc(jars, func(j string) bool { return filepath.Base(j) == "kafka_2.13-"+version+".jar" }) {
		return brokerJars{}, fmt.Errorf("maven resolved %d jars for Kafka %s but not kafka_2.13-%s.jar", len(jars), version, version)
	}
	os.RemoveAll(dir)
	if err := os.Rename(filepath.Join(work, "libs"), dir); err != nil {
		return brokerJars{}, err
	}
	jars, _ = filepath.Glob(filepath.Join(dir, "*.jar"))
	return brokerJars{dir: dir, jars: jars}, nil
}

// buildKafkaImage sends a build context of the embedded image files plus
// the jars to the engine.
func buildKafkaImage(ctx context.Context, cli *client.Client, ref, base, version string, libs brokerJars, logf func(string, ...any)) error {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeBuildContext(pw, libs))
	}()
	res, err := cli.ImageBuild(ctx, pr, client.ImageBuildOptions{
		Tags:        []string{ref},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		BuildArgs:   map[string]*string{"BASE": &base, "KAFKA_VERSION": &version},
		Labels:      map[string]string{"io.groupquake.image": "kafka", "io.groupquake.kafka.version": version, LabelBuild: buildHash()},
	})
	if err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("build %s: %v", ref, err)
	}
	defer res.Body.Close()
	var log bytes.Buffer
	if err := drainJSONStream(res.Body, &log, buildSteps(ref, logf)); err != nil {
		return fmt.Errorf("build %s: %v\n%s", ref, err, tail(log.Bytes(), 15))
	}
	return nil
}

// buildSteps says each stage of an image build as the engine's builder
// announces it ("Step 3/9 : RUN ...").
func buildSteps(ref string, logf func(string, ...any)) func(string) {
	return func(line string) {
		var n, of int
		if _, err := fmt.Sscanf(line, "Step %d/%d :", &n, &of); err != nil {
			return
		}
		_, what, _ := strings.Cut(strings.TrimSpace(line), " : ")
		logf("image: building %s: step %d of %d: %s", ref, n, of, what)
	}
}

func writeBuildContext(w io.Writer, libs brokerJars) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(imageFiles, "imagefiles", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".tmpl") {
			return err
		}
		b, err := imageFiles.ReadFile(p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if filepath.Base(p) == "run" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(p, "imagefiles/"), Mode: mode, Size: int64(len(b))}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	for _, j := range libs.jars {
		f, err := os.Open(j)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: "libs/" + filepath.Base(j), Mode: 0o644, Size: st.Size()}); err != nil {
			f.Close()
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// drainJSONStream reads the engine's JSON progress stream and returns the
// first error message it carries; each message's text goes to log and, one
// at a time, to each (both optional).
func drainJSONStream(r io.Reader, log io.Writer, each func(string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m struct {
			Stream      string `json:"stream"`
			Status      string `json:"status"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if log != nil {
			io.WriteString(log, m.Stream+m.Status)
		}
		if each != nil && m.Stream+m.Status != "" {
			each(strings.TrimRight(m.Stream+m.Status, "\n"))
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
		if m.ErrorDetail.Message != "" {
			return errors.New(m.ErrorDetail.Message)
		}
	}
	return sc.Err()
}

// CachedImages maps each served version to the Kafka image refs the engine
// already holds for it.
func CachedImages(ctx context.Context) (map[string][]string, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoEngine, err)
	}
	defer cli.Close()
	out := map[string][]string{}
	for _, v := range KafkaVersions {
		for _, ref := range []string{BuiltImageRef(v), OfficialImageRef(v)} {
			if imageExists(ctx, cli, ref) {
				out[v] = append(out[v], ref)
			}
		}
	}
	return out, nil
}
