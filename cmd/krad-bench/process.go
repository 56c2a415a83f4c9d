package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
)

// processOptions are the counts of the process benchmark.
type processOptions struct {
	runs       int
	warmup     int
	runTimeout time.Duration
}

func (o *processOptions) check() error {
	switch {
	case o.runs < 1:
		return errors.New("--runs must be at least 1")
	case o.warmup < 0:
		return errors.New("--warmup cannot be negative")
	case o.runTimeout <= 0:
		return errors.New("--run-timeout must be positive")
	}
	return nil
}

// byHand is the spec's "try it by hand" Hello, run by sh. The token reaches sh as the variable
// T, and the endpoint as HOST and PORT, so that no argv holds the token: printf is a builtin of
// dash (Debian's sh) and of bash, so "$T" becomes an argument of no process. checkShell makes sure
// of that before the first run. nc, Debian's netcat-openbsd, gets T in its environment, which
// only the user can read, as the app's terminals do.
//
// Without -N, nc keeps reading after its stdin ends until the server closes the connection,
// which the bus does after its one answer.
const byHand = `printf '{"api_version":1,"token":"%s","from":"Client","request":"Hello"}\n' "$T" | nc "$HOST" "$PORT"`

// checkShell makes sure that sh runs printf as a builtin, and finds nc.
func checkShell(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "sh", "-c", "command -V printf").Output()
	if err != nil {
		return fmt.Errorf("ask sh about printf: %w", err)
	}
	if !strings.Contains(string(out), "builtin") {
		return fmt.Errorf("sh runs printf as a program (%s), which would show the token in a process list", strings.TrimSpace(string(out)))
	}
	if _, err := exec.LookPath("nc"); err != nil {
		return fmt.Errorf("find nc: %w (on Debian: apt-get install -y netcat-openbsd)", err)
	}
	return nil
}

// invocation is one program to time: a fresh exec.Cmd each run, and a check of its output.
type invocation struct {
	name  string
	make  func(ctx context.Context) *exec.Cmd
	check func(stdout []byte) error
}

// benchProcess starts the app from bin and times `krad api` against printf | nc, interleaved.
func benchProcess(ctx context.Context, bin string, env []string, o processOptions, progress io.Writer) (*Report, error) {
	if err := checkShell(ctx); err != nil {
		return nil, err
	}
	return withApp(ctx, bin, env, progress, func(a *app, rep *Report) error {
		p, err := timeKradAPI(ctx, bin, env, a, o, progress)
		rep.Process = p
		return err
	})
}

// timeKradAPI times `krad api` against printf | nc with the app a.
func timeKradAPI(ctx context.Context, bin string, env []string, a *app, o processOptions, progress io.Writer) (*ProcessReport, error) {
	host, port, err := net.SplitHostPort(a.endpoint)
	if err != nil {
		return nil, fmt.Errorf("the app's endpoint: %w", err)
	}
	kradPath, err := filepath.Abs(filepath.Join(bin, cliName))
	if err != nil {
		return nil, fmt.Errorf("find krad: %w", err)
	}
	kradEnv := childEnv(env, "XDG_CONFIG_HOME="+a.home)
	shEnv := childEnv(env, "T="+a.token.Reveal(), "HOST="+host, "PORT="+port)
	krad := invocation{
		name: "krad api",
		make: func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, kradPath, "api")
			cmd.Env = kradEnv
			return cmd
		},
		check: func(out []byte) error {
			// krad api prints one line that names the endpoint it found through api.json.
			if !bytes.Contains(out, []byte(a.endpoint)) {
				return &failure{class: "bad output", err: errors.New("krad api did not print the app's endpoint")}
			}
			return nil
		},
	}
	nc := invocation{
		name: "printf | nc",
		make: func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "sh", "-c", byHand)
			cmd.Env = shEnv
			return cmd
		},
		check: func(out []byte) error { return checkAnswer(bytes.TrimSuffix(out, []byte("\n")), api.AnswerHello) },
	}
	return measureProcess(ctx, krad, nc, o, a, progress), nil
}

// measureProcess times runs invocations of each, after a warm-up, alternating which goes first.
func measureProcess(ctx context.Context, x, y invocation, o processOptions, a *app, progress io.Writer) *ProcessReport {
	tools := []invocation{x, y}
	var times [2][]time.Duration
	var fails [2]Failures
	for i := range o.warmup + o.runs {
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			if ctx.Err() != nil {
				fails[k].add("not made", 1, fmt.Sprint(context.Cause(ctx)))
				continue
			}
			d, err := runOnce(ctx, tools[k], o.runTimeout, a)
			if err != nil {
				fails[k].record(err)
				continue
			}
			if i >= o.warmup {
				times[k] = append(times[k], d)
			}
		}
		if (i+1)%100 == 0 {
			fmt.Fprintf(progress, "process: %d/%d runs of each\n", i+1, o.warmup+o.runs)
		}
	}
	rep := &ProcessReport{Runs: o.runs, Warmup: o.warmup}
	rep.Krad = summarizeRuns(x.name, times[0], fails[0])
	rep.Nc = summarizeRuns(y.name, times[1], fails[1])
	if rep.Nc.Mean > 0 {
		rep.MeanRatio = float64(rep.Krad.Mean) / float64(rep.Nc.Mean)
	}
	if rep.Nc.P50 > 0 {
		rep.P50Ratio = float64(rep.Krad.P50) / float64(rep.Nc.P50)
	}
	// The median, not the mean: one invocation stalled by another tenant moves the mean.
	rep.GoalMet = rep.P50Ratio > 0 && rep.P50Ratio <= 1
	return rep
}

// runOnce runs one invocation and returns its wall time, from the start of the process to the
// end of its output.
func runOnce(ctx context.Context, inv invocation, timeout time.Duration, a *app) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := inv.make(ctx)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return 0, &failure{class: "exit", err: fmt.Errorf("%s: %w: %s", inv.name, err, redact(msg, a.token))}
	}
	if err := inv.check(stdout.Bytes()); err != nil {
		return 0, err
	}
	return d, nil
}

func summarizeRuns(name string, times []time.Duration, fails Failures) Stats {
	slices.Sort(times)
	s := Stats{Server: name, Requests: len(times), Failures: fails, Failed: fails.Total()}
	s.Mean = mean(times)
	s.P50 = percentile(times, 500)
	s.P99 = percentile(times, 990)
	if len(times) > 0 {
		s.Max = times[len(times)-1]
	}
	return s
}
