package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/krad-ade/krad/internal/lockedwriter"
)

// goals are what a round-trip benchmark asks of the app in one mode, against the baseline
// measured in the same run; a zero ratio is no goal.
type goals struct {
	RPS float64 `json:"rps_at_least,omitempty"` // app ÷ baseline requests per second
	P50 float64 `json:"p50_at_most,omitempty"`  // app ÷ baseline median latency
	P99 float64 `json:"p99_at_most,omitempty"`  // app ÷ baseline p99 latency
}

// helloGoals: in every mode, the app serves at least 80% of the baseline's Hellos per second, and
// its p99 is at most twice the baseline's.
func helloGoals(string) goals { return goals{RPS: 0.80, P99: 2.0} }

// helloOptions are the counts of the Hello benchmark.
type helloOptions struct {
	seq, conc  int // requests of each round in each mode; 0 skips the mode
	clients    int // clients of the concurrent mode
	rounds     int
	warmup     int
	reqTimeout time.Duration
	// ui compares krad-ade with its UI open (on a pseudo-terminal) against krad-ade headless,
	// instead of the app against the baseline server; with control, the first is started the
	// same way but headless: what two identical apps differ by on this machine.
	ui, control bool
}

// uiGoals: with its UI open the app serves within 5% of its headless self.
func uiGoals(string) goals { return goals{RPS: 0.95, P99: 1.05} }

func (o *helloOptions) check() error {
	switch {
	case o.seq < 0 || o.conc < 0 || o.warmup < 0:
		return errors.New("request counts cannot be negative")
	case o.seq == 0 && o.conc == 0:
		return errors.New("--seq and --conc are both 0: nothing to measure")
	case o.clients < 1:
		return errors.New("--clients must be at least 1")
	case o.rounds < 1:
		return errors.New("--rounds must be at least 1")
	case o.reqTimeout <= 0:
		return errors.New("--request-timeout must be positive")
	case o.control && !o.ui:
		return errors.New("--control goes with --ui")
	}
	return nil
}

// benchHello starts the app from bin and the baseline from self, measures both, and stops them.
func benchHello(ctx context.Context, bin, self string, env []string, o helloOptions, progress io.Writer) (*Report, error) {
	progress = lockedwriter.New(progress) // the baseline's stderr goes there too
	if o.ui {
		return benchUI(ctx, bin, env, o, progress)
	}
	return withApp(ctx, bin, env, progress, func(a *app, rep *Report) error {
		appT, err := newTarget(appName, a.endpoint, a.token)
		if err != nil {
			return err
		}
		appT.pid = a.proc.pid()
		b, err := startBaseline(ctx, self, env, a.hello, progress)
		if err != nil {
			return err
		}
		defer b.stop()
		// The baseline checks no token; it gets the same line so that both servers read as much.
		baseT := &target{name: "baseline", addr: b.addr, line: appT.line, pid: b.proc.pid()}
		rep.Hello = measureHello(ctx, appT, baseT, o, helloGoals, progress)
		return nil
	})
}

// benchUI measures krad-ade with its UI open against krad-ade headless, both from bin, in one run.
func benchUI(ctx context.Context, bin string, env []string, o helloOptions, progress io.Writer) (*Report, error) {
	return withApp(ctx, bin, env, progress, func(headless *app, rep *Report) error {
		fmt.Fprintf(progress, "starting %s with its UI from %s\n", appName, bin)
		shown, err := startAppOn(ctx, bin, env, !o.control)
		if err != nil {
			return err
		}
		defer func() {
			shown.stop()
			rep.Notes = append(rep.Notes, shown.notes...)
		}()
		uiT, err := newTarget(appName+" (UI)", shown.endpoint, shown.token)
		if err != nil {
			return err
		}
		uiT.pid = shown.proc.pid()
		baseT, err := newTarget(appName+" (headless)", headless.endpoint, headless.token)
		if err != nil {
			return err
		}
		baseT.pid = headless.proc.pid()
		if o.control {
			uiT.name = appName + " (headless, in the UI's place)"
			rep.Notes = append(rep.Notes, "--ui --control: both apps are krad-ade headless, in the same places as --ui puts them: the difference between them is the machine's")
		} else {
			rep.Notes = append(rep.Notes, "--ui: the app is krad-ade with its UI open on a 120×40 pseudo-terminal; the baseline is krad-ade headless")
		}
		rep.Hello = measureHello(ctx, uiT, baseT, o, uiGoals, progress)
		return nil
	})
}

// withApp starts the app from bin, runs measure with it and a new report, and stops the app,
// whose notes join the report's, with one about a global timeout that ended the run early.
func withApp(ctx context.Context, bin string, env []string, progress io.Writer, measure func(*app, *Report) error) (*Report, error) {
	rep := &Report{Machine: thisMachine()}
	fmt.Fprintf(progress, "starting %s from %s\n", appName, bin)
	a, err := startApp(ctx, bin, env)
	if err != nil {
		return nil, err
	}
	rep.AppBuild = a.build
	err = measure(a, rep)
	a.stop()
	rep.Notes = append(rep.Notes, a.notes...)
	if err != nil {
		return nil, err
	}
	if err := context.Cause(ctx); err != nil && errors.Is(err, context.DeadlineExceeded) {
		rep.Notes = append(rep.Notes, "the global timeout ended the run early: raise --timeout")
	}
	return rep, nil
}

// measureHello runs each mode: a warm-up of both servers, then rounds that alternate between
// them, the first server of each round taking turns, so that the machine's noise hits both.
func measureHello(ctx context.Context, app, base *target, o helloOptions, goalsOf func(mode string) goals, progress io.Writer) *HelloReport {
	rep := &HelloReport{Rounds: o.rounds, Warmup: o.warmup}
	modes := []struct {
		name     string
		clients  int
		requests int
	}{
		{"sequential", 1, o.seq},
		{"concurrent", o.clients, o.conc},
	}
	for _, m := range modes {
		if m.requests == 0 {
			continue
		}
		servers := []*target{app, base}
		var warm [2]Failures
		if o.warmup > 0 {
			for i, t := range servers {
				warm[i] = load(ctx, t, m.clients, o.warmup, o.reqTimeout).failed
			}
		}
		rounds := [2][]round{}
		for r := range o.rounds {
			order := []int{0, 1}
			if r%2 == 1 {
				order = []int{1, 0}
			}
			for _, i := range order {
				got := load(ctx, servers[i], m.clients, m.requests, o.reqTimeout)
				rounds[i] = append(rounds[i], got)
				fmt.Fprintf(progress, "%s, round %d/%d, %s: %.0f req/s, %d failed\n",
					modeLabel(m.name, m.clients), r+1, o.rounds, servers[i].name, rps(len(got.latencies), got.elapsed), got.failed.Total())
			}
		}
		g := goalsOf(m.name)
		res := HelloMode{
			Goals:    g,
			Mode:     m.name,
			Clients:  m.clients,
			Requests: m.requests,
			App:      summarize(app.name, rounds[0], warm[0]),
			Baseline: summarize(base.name, rounds[1], warm[1]),
		}
		if res.Baseline.RPS > 0 {
			res.RPSRatio = res.App.RPS / res.Baseline.RPS
		}
		if res.Baseline.P50 > 0 {
			res.P50Ratio = float64(res.App.P50) / float64(res.Baseline.P50)
		}
		if res.Baseline.P99 > 0 {
			res.P99Ratio = float64(res.App.P99) / float64(res.Baseline.P99)
		}
		res.RPSGoalMet = g.RPS == 0 || res.RPSRatio >= g.RPS
		res.P50GoalMet = g.P50 == 0 || res.P50Ratio > 0 && res.P50Ratio <= g.P50
		res.P99GoalMet = g.P99 == 0 || res.P99Ratio > 0 && res.P99Ratio <= g.P99
		rep.Modes = append(rep.Modes, res)
	}
	return rep
}

// median is the median of xs, the mean of the middle two for an even count.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func rps(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// summarize pools the rounds of one server. Its requests per second are those of its median
// round: on a shared machine a stall of a second now and then (another tenant, the hypervisor)
// can halve one round, and the median keeps that out of the comparison; the pooled figure is
// kept beside it. The percentiles are over the full sorted sample of every round.
func summarize(name string, rounds []round, warm Failures) Stats {
	s := Stats{Server: name}
	var all []time.Duration
	var elapsed, cpu time.Duration
	made := 0
	for _, r := range rounds {
		all = append(all, r.latencies...)
		elapsed += r.elapsed
		cpu += r.cpu
		made += len(r.latencies) + r.failed.Total()
		s.RoundRPS = append(s.RoundRPS, rps(len(r.latencies), r.elapsed))
		s.Failures.merge(r.failed)
	}
	s.Failures.merge(warm)
	slices.Sort(all)
	s.Requests = len(all)
	s.Failed = s.Failures.Total()
	s.PooledRPS = rps(len(all), elapsed)
	s.RPS = median(s.RoundRPS)
	s.Mean = mean(all)
	s.P50 = percentile(all, 500)
	s.P99 = percentile(all, 990)
	if len(all) > 0 {
		s.Max = all[len(all)-1]
	}
	if made > 0 {
		s.ServerCPU = cpu / time.Duration(made)
	}
	return s
}
