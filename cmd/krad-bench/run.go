package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // a request failed, or the run could not be made
	exitUsage   = 2
	defaultWait = 10 * time.Minute
)

const usage = `usage: krad-bench COMMAND [flags]

commands:
  hello --bin DIR      Hello round trips against krad-ade and a plain Go line server
  requests --bin DIR   List, and Hello with its keys in another order, against the same line server
  process --bin DIR    krad api as a whole process against printf | nc

DIR holds krad-ade, krad and krad-ade-agents. Run "krad-bench COMMAND -h" for the flags.
`

// Run runs krad-bench with args (without the program name). env is the environment the
// children start from (os.Environ()); stdin is read only by the hidden serve-baseline mode, which
// stops when it closes.
func Run(ctx context.Context, args, env []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "hello":
		return runHelloCmd(ctx, args[1:], env, stdout, stderr)
	case "requests":
		return runRequestsCmd(ctx, args[1:], env, stdout, stderr)
	case "process":
		return runProcessCmd(ctx, args[1:], env, stdout, stderr)
	case baselineMode:
		return serveBaselineCmd(ctx, args[1:], stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "krad-bench: error: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

// common are the flags of both measuring commands.
type common struct {
	bin     string
	timeout time.Duration
	json    bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.bin, "bin", "", "`DIR` holding krad-ade, krad and krad-ade-agents (required)")
	fs.DurationVar(&c.timeout, "timeout", defaultWait, "global timeout for the whole run")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of Markdown")
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("krad-bench "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parse parses args, runs checks in order, and reports the exit code to return at once, if any.
// The checks are method values taken before parsing, so their receivers must be pointers to see
// the parsed flags.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer, checks ...func() error) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, true
		}
		return exitUsage, true
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "krad-bench: error: unexpected argument %q\n", fs.Arg(0))
		return exitUsage, true
	}
	for _, check := range checks {
		if err := check(); err != nil {
			fmt.Fprintf(stderr, "krad-bench: error: %v\n", err)
			return exitUsage, true
		}
	}
	return 0, false
}

func (c *common) check() error {
	if c.bin == "" {
		return errors.New("--bin DIR is required: the folder of krad-ade, krad and krad-ade-agents")
	}
	if c.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	return nil
}

func runHelloCmd(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	return runRoundTrips(ctx, "hello", benchHello, args, env, stdout, stderr)
}

func runRequestsCmd(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	return runRoundTrips(ctx, "requests", runBenchRequests, args, env, stdout, stderr)
}

// runRoundTrips runs a round-trip command, hello or requests: they take the same flags.
func runRoundTrips(ctx context.Context, name string, bench func(context.Context, string, string, []string, helloOptions, io.Writer) (*Report, error),
	args, env []string, stdout, stderr io.Writer) int {
	var c common
	o := helloOptions{}
	fs := newFlagSet(name, stderr)
	c.register(fs)
	fs.IntVar(&o.seq, "seq", 20000, "requests of each sequential round (0 skips the mode)")
	fs.IntVar(&o.conc, "conc", 50000, "requests of each concurrent round (0 skips the mode)")
	fs.IntVar(&o.clients, "clients", 16, "clients of the concurrent mode")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds of each server in each mode, interleaved")
	fs.IntVar(&o.warmup, "warmup", 2000, "requests to each server before a mode's rounds, not measured")
	fs.DurationVar(&o.reqTimeout, "request-timeout", 10*time.Second, "deadline of one request")
	if name == "hello" {
		fs.BoolVar(&o.ui, "ui", false, "measure krad-ade with its UI open against krad-ade headless")
		fs.BoolVar(&o.control, "control", false, "with --ui: the first app headless too, in the UI's place: what two identical apps differ by on this machine")
	}
	if code, done := parse(fs, args, stderr, c.check, o.check); done {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "krad-bench: error: find own executable for the baseline: %v\n", err)
		return exitFailed
	}
	rep, err := bench(ctx, c.bin, self, env, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "krad-bench: error: %v\n", err)
		return exitFailed
	}
	return finish(rep, c.json, stdout, stderr)
}

func runProcessCmd(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	var c common
	o := processOptions{}
	fs := newFlagSet("process", stderr)
	c.register(fs)
	fs.IntVar(&o.runs, "runs", 300, "invocations of each tool, interleaved")
	fs.IntVar(&o.warmup, "warmup", 10, "invocations of each tool before the measured ones")
	fs.DurationVar(&o.runTimeout, "run-timeout", 10*time.Second, "deadline of one invocation")
	if code, done := parse(fs, args, stderr, c.check, o.check); done {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()

	rep, err := benchProcess(ctx, c.bin, env, o, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "krad-bench: error: %v\n", err)
		return exitFailed
	}
	return finish(rep, c.json, stdout, stderr)
}

// finish prints the report and turns its failures into the exit code.
func finish(rep *Report, asJSON bool, stdout, stderr io.Writer) int {
	var err error
	if asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteMarkdown(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "krad-bench: error: write the report: %v\n", err)
		return exitFailed
	}
	if n := rep.Failed(); n > 0 {
		fmt.Fprintf(stderr, "krad-bench: error: %d requests failed; see the report\n", n)
		return exitFailed
	}
	return exitOK
}
