package javatool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// fakeTools puts shell scripts named by scripts (name → body) into a fresh
// directory and makes it the whole PATH, so only those tools are found (the
// scripts themselves see the system's).
func fakeTools(t *testing.T, scripts map[string]string) string {
	t.Helper()
	bin := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nPATH=/usr/bin:/bin\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	return bin
}

// entries lists what dir holds, to prove a failure left nothing behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// failedWithTail checks the error of what: it says every one of want (the
// tool's last lines among them) and not tooEarly (a line before those), and
// the failure left nothing in dir.
func failedWithTail(t *testing.T, what string, err error, dir, tooEarly string, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s = nil error", what)
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: error %q does not say %q", what, msg, w)
		}
	}
	if strings.Contains(msg, tooEarly) {
		t.Errorf("%s: error %q has more than the tool's last lines (%q)", what, msg, tooEarly)
	}
	if e := entries(t, dir); len(e) != 0 {
		t.Errorf("%s left %v in %s", what, e, dir)
	}
}

func TestCheckToolsNamesWhatIsMissingAndWhatToInstall(t *testing.T) {
	for _, c := range []struct {
		have     []string
		missing  string
		install  string
		noManual string // a package that must not be asked for
	}{
		{have: nil, missing: "missing: java, javac, mvn", install: "apt-get install openjdk-17-jdk-headless maven"},
		{have: []string{"java", "javac"}, missing: "missing: mvn", install: "apt-get install maven)", noManual: "openjdk"},
		{have: []string{"java", "mvn"}, missing: "missing: javac", install: "apt-get install openjdk-17-jdk-headless)", noManual: "maven"},
	} {
		scripts := map[string]string{}
		for _, h := range c.have {
			scripts[h] = "exit 0"
		}
		fakeTools(t, scripts)
		err := CheckTools("the Java member kinds (java-*)")
		if err == nil {
			t.Fatalf("with only %v on PATH: CheckTools = nil, want an error", c.have)
		}
		msg := err.Error()
		if !errors.Is(err, ErrMissingTools) {
			t.Errorf("with only %v on PATH: %v does not wrap ErrMissingTools", c.have, err)
		}
		for _, want := range []string{"the Java member kinds (java-*): ", c.missing, c.install} {
			if !strings.Contains(msg, want) {
				t.Errorf("with only %v on PATH: %q does not say %q", c.have, msg, want)
			}
		}
		if c.noManual != "" && strings.Contains(strings.SplitN(msg, "Debian:", 2)[1], c.noManual) {
			t.Errorf("with only %v on PATH: %q asks to install %s, which is there", c.have, msg, c.noManual)
		}
	}
	fakeTools(t, map[string]string{"java": "exit 0", "javac": "exit 0", "mvn": "exit 0"})
	if err := CheckTools("x"); err != nil {
		t.Errorf("with java, javac and mvn on PATH: CheckTools = %v, want nil", err)
	}
}

var clients = []Artifact{{Group: "org.apache.kafka", Name: "kafka-clients", Version: "4.4.0"}}

// mvnArg is a shell snippet that sets $out to mvn's -DoutputDirectory.
const mvnArg = `for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#-DoutputDirectory=}";; esac; done`

// Resolve without mvn and Compile without javac refuse with an error that
// names the tool, the package that installs it and what was asked, and
// leave nothing in the cache directory.
func TestWithoutToolSaysWhatToInstall(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		tools map[string]string
		call  func(dir string) error
		want  []string // the tool, its package, what was asked
	}{
		{"Resolve", nil, func(dir string) error {
			_, err := Maven{}.Resolve(ctx, clients, dir)
			return err
		}, []string{"missing: mvn", "apt-get install maven", "kafka-clients 4.4.0"}},
		{"Compile", map[string]string{"java": "exit 0"}, func(dir string) error {
			_, err := Compile(ctx, []byte("public class Hello {}"), "Hello", "", dir)
			return err
		}, []string{"missing: javac", "openjdk-17-jdk-headless", "Hello.java"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeTools(t, c.tools)
			dir := filepath.Join(t.TempDir(), "cache")
			err := c.call(dir)
			if err == nil || !errors.Is(err, ErrMissingTools) {
				t.Fatalf("%s without the tool = %v, want ErrMissingTools", c.name, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s without the tool = %v, want it to say %q", c.name, err, w)
				}
			}
			if e := entries(t, dir); len(e) != 0 {
				t.Errorf("a refused %s left %v in %s", c.name, e, dir)
			}
		})
	}
}

func TestResolveFailureShowsMavensLastLines(t *testing.T) {
	// 30 numbered lines, then a failure: the error must carry the last 12.
	fakeTools(t, map[string]string{"mvn": `i=1; while [ $i -le 30 ]; do echo "maven line $i"; i=$((i+1)); done; exit 1`})
	dir := t.TempDir()
	_, err := Maven{}.Resolve(context.Background(), clients, dir)
	failedWithTail(t, "Resolve with a failing mvn", err, dir, "maven line 18\n",
		"resolving kafka-clients 4.4.0 with Maven failed", "Maven Central", "exit status 1", "maven line 19\n", "maven line 30")
}

func TestResolveWithoutTheJarIsAnError(t *testing.T) {
	fakeTools(t, map[string]string{"mvn": mvnArg + `; mkdir -p "$out"; touch "$out/other-1.jar"`})
	dir := t.TempDir()
	_, err := Maven{}.Resolve(context.Background(), clients, dir)
	if err == nil || !strings.Contains(err.Error(), "no kafka-clients-4.4.0.jar") {
		t.Fatalf("Resolve where mvn left no kafka-clients jar = %v, want an error naming the jar", err)
	}
	if e := entries(t, dir); len(e) != 0 {
		t.Errorf("a failed Resolve left %v in %s", e, dir)
	}
}

func TestResolveCachesAndPassesArgs(t *testing.T) {
	bin := fakeTools(t, nil)
	calls := filepath.Join(t.TempDir(), "calls")
	// The fake mvn records its arguments and the pom it was given, and
	// writes one jar per dependency the pom lists.
	script := fmt.Sprintf(`echo "$@" >> %q; cp pom.xml %q.pom; %s; mkdir -p "$out"
for j in $(sed -n 's|.*<artifactId>\([^<]*\)</artifactId><version>\([^<]*\)</version>.*|\1-\2.jar|p' pom.xml); do touch "$out/$j"; done`, calls, calls, mvnArg)
	if err := os.WriteFile(filepath.Join(bin, "mvn"), []byte("#!/bin/sh\nPATH=/usr/bin:/bin\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	two := append(clients, Artifact{Group: "org.apache.kafka", Name: "kafka-group-coordinator", Version: "4.4.0"})
	dir := t.TempDir()
	var logged []string
	m := Maven{Args: []string{"-o"}, Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	for range 2 {
		libs, err := m.Resolve(context.Background(), two, dir)
		if err != nil {
			t.Fatal(err)
		}
		if libs != filepath.Join(dir, "libs") {
			t.Errorf("Resolve = %s, want %s", libs, filepath.Join(dir, "libs"))
		}
		for _, a := range two {
			if _, err := os.Stat(filepath.Join(libs, a.Jar())); err != nil {
				t.Errorf("Resolve left no %s: %v", a.Jar(), err)
			}
		}
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 {
		t.Errorf("mvn ran %d times for two Resolves, want once (the second is cached): %q", len(lines), lines)
	} else if !strings.HasPrefix(lines[0], "-B -o dependency:copy-dependencies -DincludeScope=runtime ") {
		t.Errorf("mvn ran with %q, want -B (batch: its download lines are counted), the extra args, then copy-dependencies of the runtime scope", lines[0])
	}
	pomText, err := os.ReadFile(calls + ".pom")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range two {
		want := "<groupId>" + a.Group + "</groupId><artifactId>" + a.Name + "</artifactId><version>" + a.Version + "</version>"
		if !strings.Contains(string(pomText), want) {
			t.Errorf("the pom does not list %s:\n%s", want, pomText)
		}
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "kafka-clients 4.4.0, kafka-group-coordinator 4.4.0") {
		t.Errorf("logged %q, want one line naming both artifacts", logged)
	}
	if e := entries(t, dir); len(e) != 1 || e[0] != "libs" {
		t.Errorf("after Resolve %s holds %v, want only libs", dir, e)
	}
}

func TestCompileFailureShowsJavacsLastLines(t *testing.T) {
	fakeTools(t, map[string]string{"javac": `i=1; while [ $i -le 25 ]; do echo "javac line $i" >&2; i=$((i+1)); done; exit 2`})
	dir := t.TempDir()
	_, err := Compile(context.Background(), []byte("public class Hello {}"), "Hello", "/libs/*", dir)
	failedWithTail(t, "Compile with a failing javac", err, dir, "javac line 5\n",
		"compiling Hello.java against /libs/* failed", "exit status 2", "javac line 6\n", "javac line 25")
}

// TestCompileWithJavac compiles a real class with the machine's javac: once
// per source (the second call finds it), a changed source anew.
func TestCompileWithJavac(t *testing.T) {
	if _, err := exec.LookPath("javac"); err != nil {
		t.Skip("no javac on PATH: the compile with a real JDK is not tested here (the fake-javac tests still run)")
	}
	dir := t.TempDir()
	src := []byte("public class Hello { public static void main(String[] a) { System.out.println(\"hello\"); } }\n")
	classes, err := Compile(context.Background(), src, "Hello", "", dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(classes, "Hello.class")); err != nil {
		t.Fatalf("Compile returned %s without Hello.class: %v", classes, err)
	}
	t.Setenv("PATH", t.TempDir()) // a cached class needs no javac
	again, err := Compile(context.Background(), src, "Hello", "", dir)
	if err != nil || again != classes {
		t.Errorf("second Compile of the same source = %s, %v; want the cached %s", again, err, classes)
	}
	changed, err := Compile(context.Background(), append(src, '\n'), "Hello", "", dir)
	if err == nil || changed == classes {
		t.Errorf("Compile of a changed source without javac = %s, %v; want a new directory and an error (no javac)", changed, err)
	}
	if e := entries(t, dir); len(e) != 1 {
		t.Errorf("after compiling %s holds %v, want only the one classes directory", dir, e)
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"one\n", 3, "one"},
		{"\n  a\nb\nc\n\n", 2, "b\nc"},
		{"a\nb\nc", 3, "a\nb\nc"},
		{"a\nb\nc", 1, "c"},
	} {
		if got := LastLines([]byte(c.in), c.n); got != c.want {
			t.Errorf("LastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestCacheDir(t *testing.T) {
	t.Setenv("GROUPQUAKE_CACHE", "/somewhere")
	if d, err := cacheDir("4.4.0"); err != nil || d != filepath.Join("/somewhere", "java", "4.4.0") {
		t.Errorf("cacheDir(4.4.0) with GROUPQUAKE_CACHE=/somewhere = %s, %v", d, err)
	}
	if runtime.GOOS != "linux" {
		return // the user cache directory is XDG_CACHE_HOME on Linux only
	}
	t.Setenv("GROUPQUAKE_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	t.Setenv("HOME", "/home/u")
	if d, err := cacheDir("group-coordinator-4.4.0"); err != nil || d != filepath.Join("/xdg", "groupquake", "java", "group-coordinator-4.4.0") {
		t.Errorf("cacheDir without GROUPQUAKE_CACHE = %s, %v, want it under the user cache directory", d, err)
	}
}

// TestBuildLayout: Build puts the jars into <cache>/java/<Cache>/libs and
// the classes beside them, and returns the class path of both.
func TestBuildLayout(t *testing.T) {
	fakeTools(t, map[string]string{
		"mvn": mvnArg + `; mkdir -p "$out"; touch "$out/kafka-clients-4.4.0.jar" "$out/dep-1.jar"`,
		"javac": `while [ $# -gt 0 ]; do case "$1" in -d) out="$2"; shift;; -cp) cp="$2"; shift;; esac; shift; done
mkdir -p "$out"; echo "$cp" > "$out/Hello.class"`,
	})
	root := t.TempDir()
	t.Setenv("GROUPQUAKE_CACHE", root)
	p := Program{Source: []byte("public class Hello {}"), Class: "Hello", Cache: "4.4.0", Artifacts: clients}
	cp, err := Maven{}.Build(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "java", "4.4.0")
	classes, jars, ok := strings.Cut(cp, string(os.PathListSeparator))
	if !ok || jars != filepath.Join(dir, "libs", "*") || filepath.Dir(classes) != dir || !strings.HasPrefix(filepath.Base(classes), "classes-") {
		t.Fatalf("Build = %q, want %s/classes-<hash>%c%s", cp, dir, os.PathListSeparator, filepath.Join(dir, "libs", "*"))
	}
	b, err := os.ReadFile(filepath.Join(classes, "Hello.class"))
	if err != nil || strings.TrimSpace(string(b)) != jars {
		t.Errorf("javac was given class path %q (%v), want %q", b, err, jars)
	}
	if e := entries(t, dir); !reflect.DeepEqual(e, []string{filepath.Base(classes), "libs"}) {
		t.Errorf("%s holds %v, want only the classes and libs", dir, e)
	}
}
