package results

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromiumNames are the binaries headless Chromium goes by (Debian's package installs "chromium").
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// needChromium returns the path of a Chromium binary that runs headless. $GROUPQUAKE_CHROMIUM names
// one explicitly. When none is installed and the test runs as root, it installs Debian's chromium
// package with apt-get (so a fresh machine and CI need nothing done by hand); otherwise the test
// fails and says how to install it. Under -short it skips and says so (the unit tier runs no
// browser).
func needChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("renders the report in headless Chromium: skipped under -short (the unit tier); run without -short")
	}
	if p := os.Getenv("GROUPQUAKE_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("GROUPQUAKE_CHROMIUM=%s: %v: point it at a Chromium binary, or unset it to use (or install) Debian's chromium", p, err)
		}
		return p
	}
	if p := findChromium(); p != "" {
		return p
	}
	if os.Geteuid() != 0 {
		t.Fatalf("headless Chromium is needed to render the report and none is installed (looked for %s): install Debian's package with `sudo apt-get install -y chromium`, or set GROUPQUAKE_CHROMIUM to a Chromium binary", strings.Join(chromiumNames, ", "))
	}
	t.Logf("no Chromium found: installing Debian's chromium package with apt-get (once per machine)")
	if err := aptInstall(t, "chromium"); err != nil {
		t.Fatalf("installing Debian's chromium with apt-get failed: %v; install it by hand (`apt-get install -y chromium`) or set GROUPQUAKE_CHROMIUM", err)
	}
	if p := findChromium(); p != "" {
		return p
	}
	t.Fatalf("apt-get installed chromium, yet none of %s is on PATH", strings.Join(chromiumNames, ", "))
	return ""
}

func findChromium() string {
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// aptInstall installs Debian packages, waiting for the dpkg lock another installer may hold, and
// refreshes the package lists once when the first attempt fails (stale lists cannot find it).
func aptInstall(t *testing.T, pkgs ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	apt := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "apt-get", append([]string{"-o", "DPkg::Lock::Timeout=600", "-q"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	install := append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)
	out, err := apt(install...)
	if err == nil {
		return nil
	}
	t.Logf("apt-get install failed (%v): refreshing the package lists and trying again\n%s", err, tail(out))
	if uout, uerr := apt("update"); uerr != nil {
		return fmt.Errorf("apt-get update: %v\n%s", uerr, tail(uout))
	}
	if out, err = apt(install...); err != nil {
		return fmt.Errorf("apt-get install %s: %v\n%s", strings.Join(pkgs, " "), err, tail(out))
	}
	return nil
}

func tail(b []byte) string {
	const n = 2000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// headless runs Chromium over the file page with args (--dump-dom, --screenshot=…) and returns its
// standard output.
func headless(t *testing.T, bin, page string, args ...string) string {
	t.Helper()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{
		"--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
	}
	if os.Geteuid() == 0 {
		base = append(base, "--no-sandbox") // Chromium refuses to run as root with its sandbox
	}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+abs)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, tail([]byte(stderr.String())))
	}
	return string(out)
}
