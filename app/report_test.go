package app

import (
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
)

// TestRunsStartWakesSpawn: krad-ade-agents run's start, when the worker's output has made it
// working already, changes nothing that is shown, but it is what a Spawn waits for (heard): it
// wakes the Spawn's wait, which then answers, rather than at the next change (the quiet spell's
// idle) or at its own deadline.
func TestRunsStartWakesSpawn(t *testing.T) {
	t.Parallel()
	a := New(Config{Quiet: time.Hour})
	e := a.envs[Local]
	a.mu.Lock()
	tm := e.registerLocked(windowMeta{Terminal: 2, Title: "w", Role: api.RoleWorker, Runs: true})
	tm.output(time.Now(), a.cfg.Quiet) // the title run sets, say
	waiting := a.changed               // what a wait (waitFor) sleeps on until the next change
	a.mu.Unlock()
	if err := a.report(api.TerminalID{Environment: Local, Terminal: 2}, &api.ReportBody{State: api.StateWorking, Lifecycle: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
	default:
		t.Error("run's start did not wake the waits on the terminal")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !tm.heard || tm.state != api.StateWorking {
		t.Errorf("the terminal is %s, heard %v; want working and heard", tm.state, tm.heard)
	}
}
