package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// hexToken is the shape of a token: no output of krad-bench may hold one.
var hexToken = regexp.MustCompile(`[0-9a-f]{32}`)

// runMain runs krad-bench as its main does, with the baseline re-executed from the test binary.
func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv(asMain, "1")
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errs bytes.Buffer
	code = Run(ctx, args, os.Environ(), nil, &out, &errs)
	return code, out.String(), errs.String()
}

// runBriefly runs a round-trip command of krad-bench (hello or requests) briefly against the
// app and returns its JSON report; it fails the test unless it exits 0 with a report that holds
// nothing shaped like a token.
func runBriefly(t *testing.T, command string) Report {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts krad-ade")
	}
	bin := testbin.Dir(t)
	code, stdout, stderr := runMain(t, command, "--bin", bin, "--seq", "30", "--conc", "100",
		"--clients", "4", "--rounds", "2", "--warmup", "5", "--json")
	if code != exitOK {
		t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr)
	}
	var rep Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, stdout)
	}
	if strings.Contains(stderr, "DATA RACE") {
		t.Errorf("a child reported a race:\n%s", stderr)
	}
	if hexToken.MatchString(stdout) || hexToken.MatchString(stderr) {
		t.Error("the output holds something shaped like a token")
	}
	for _, n := range rep.Notes {
		t.Logf("note: %s", n)
	}
	return rep
}

// checkModes checks that each mode of h measured every request of its two rounds, on both
// servers, and none failed.
func checkModes(t *testing.T, h *HelloReport) {
	t.Helper()
	if h == nil || len(h.Modes) != 2 {
		t.Fatalf("got %+v, want two modes", h)
	}
	for _, m := range h.Modes {
		for _, s := range []Stats{m.App, m.Baseline} {
			if s.Failed != 0 || s.Requests != 2*m.Requests {
				t.Errorf("%s%s, %s: %d measured, %d failed (%s), want %d and 0", h.label(", "), m.Mode, s.Server, s.Requests, s.Failed, s.Failures.String(), 2*m.Requests)
			}
		}
	}
}

// TestHelloAgainstTheApp runs `krad-bench hello` briefly: both servers answer every Hello.
func TestHelloAgainstTheApp(t *testing.T) {
	rep := runBriefly(t, "hello")
	checkModes(t, rep.Hello)
	if rep.AppBuild == "" {
		t.Error("the report names no app build")
	}
}

// TestRequestsAgainstTheApp runs `krad-bench requests` briefly: a List and a reordered Hello
// each get their answer from the app, and from a baseline that answers what the app did, with
// the goals of their mode.
func TestRequestsAgainstTheApp(t *testing.T) {
	rep := runBriefly(t, "requests")
	var labels []string
	for _, h := range rep.Requests {
		labels = append(labels, h.Request)
		checkModes(t, h)
		for _, m := range h.Modes {
			if m.Goals != requestGoals(m.Mode) {
				t.Errorf("%s, %s: goals %+v, want %+v", h.Request, m.Mode, m.Goals, requestGoals(m.Mode))
			}
		}
	}
	if want := []string{"List", "Hello, keys in another order"}; !slices.Equal(labels, want) {
		t.Errorf("the report measures %q, want %q", labels, want)
	}
}

// TestProcessAgainstTheApp runs `krad-bench process` for a few runs: krad api and printf | nc
// must both get their Hello.
func TestProcessAgainstTheApp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts krad-ade")
	}
	if _, err := exec.LookPath("nc"); err != nil {
		t.Skip("nc is missing (scripts/test installs netcat-openbsd)")
	}
	bin := testbin.Dir(t)
	code, stdout, stderr := runMain(t, "process", "--bin", bin, "--runs", "4", "--warmup", "1")
	if code != exitOK {
		t.Fatalf("exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"| krad api | 4 | 0 |", `| printf \| nc | 4 | 0 |`} {
		if !bytes.Contains([]byte(stdout), []byte(want)) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	if hexToken.MatchString(stdout) || hexToken.MatchString(stderr) {
		t.Error("the output holds something shaped like a token")
	}
}

// TestAppThatExitsEarlyIsNoted: an app that is gone before krad-bench stops it is a note in the
// report, and its config folder is removed all the same.
func TestAppThatExitsEarlyIsNoted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts krad-ade")
	}
	bin := testbin.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := startApp(ctx, bin, os.Environ())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.proc.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-a.proc.done
	a.stop()
	if len(a.notes) != 1 || !strings.Contains(a.notes[0], "exited during the run") {
		t.Errorf("got notes %q, want one that says the app exited during the run", a.notes)
	}
	if _, err := os.Stat(a.home); !os.IsNotExist(err) {
		t.Errorf("the app's config folder is still there (%v)", err)
	}
}

// TestHelloWithTheUI runs `krad-bench hello --ui` for a few requests: krad-ade with its UI open
// (it logs to its log file, not to stderr) against krad-ade headless, both answering every Hello.
func TestHelloWithTheUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts krad-ade")
	}
	bin := testbin.Dir(t)
	code, stdout, stderr := runMain(t, "hello", "--bin", bin, "--ui", "--seq", "50", "--conc", "100", "--rounds", "1", "--warmup", "10")
	if code != exitOK {
		t.Fatalf("exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"| krad-ade (UI) | 50 | 0 |", "| krad-ade (headless) | 50 | 0 |", "≥ 95%", "UI open on a 120×40 pseudo-terminal"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestAppOnATerminalShowsItsUI: startAppOn with ui runs krad-ade on a terminal, where it shows
// its UI: its log goes to its log file in the state folder.
func TestAppOnATerminalShowsItsUI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts krad-ade")
	}
	bin := testbin.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := startAppOn(ctx, bin, os.Environ(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.stop()
	logFile := filepath.Join(a.home, "state", "krad-ade", "krad-ade.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(logFile)
		if strings.Contains(string(b), "msg=serving") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no serving line in %s within 30 s: %q", logFile, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
