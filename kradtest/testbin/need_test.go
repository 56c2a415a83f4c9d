package testbin

import (
	"os/exec"
	"testing"
)

// fakeTB records how a test ended, in place of the real one.
type fakeTB struct {
	testing.TB
	fatal, skip string
}

func (f *fakeTB) Helper()                 {}
func (f *fakeTB) Fatal(args ...any)       { f.fatal = args[0].(string); panic(f) }
func (f *fakeTB) Skip(args ...any)        { f.skip = args[0].(string); panic(f) }
func (f *fakeTB) run(fn func(testing.TB)) { defer func() { recover() }(); fn(f) }

func TestNeed(t *testing.T) {
	const none = "krad-no-such-program"
	t.Run("missing, outside CI: skipped", func(t *testing.T) {
		t.Setenv("CI", "")
		f := &fakeTB{}
		f.run(func(tb testing.TB) { Need(tb, none, "some-package") })
		if f.skip != none+" is missing: apt-get install some-package" || f.fatal != "" {
			t.Errorf("skip %q, fatal %q; want a skip that names the package", f.skip, f.fatal)
		}
	})
	t.Run("missing, under CI: failed", func(t *testing.T) {
		t.Setenv("CI", "1")
		f := &fakeTB{}
		f.run(func(tb testing.TB) { Need(tb, none, "some-package") })
		if f.fatal == "" || f.skip != "" {
			t.Errorf("skip %q, fatal %q; want a failure", f.skip, f.fatal)
		}
	})
	t.Run("cannot, outside CI: skipped", func(t *testing.T) {
		t.Setenv("CI", "")
		f := &fakeTB{}
		f.run(func(tb testing.TB) { Cannot(tb, "cannot mount a tmpfs") })
		if f.skip != "cannot mount a tmpfs" || f.fatal != "" {
			t.Errorf("skip %q, fatal %q; want a skip that says why", f.skip, f.fatal)
		}
	})
	t.Run("cannot, under CI: failed", func(t *testing.T) {
		t.Setenv("CI", "1")
		f := &fakeTB{}
		f.run(func(tb testing.TB) { Cannot(tb, "cannot mount a tmpfs") })
		if f.fatal != "cannot mount a tmpfs, and CI must run this test" || f.skip != "" {
			t.Errorf("skip %q, fatal %q; want a failure", f.skip, f.fatal)
		}
	})
	t.Run("there", func(t *testing.T) {
		want, err := exec.LookPath("sh")
		if err != nil {
			t.Skip("no sh")
		}
		if got := Need(t, "sh", "dash"); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
}

// TestPairedEstimates: the median of an even count is the mean of its middle two; the geometric
// mean of pairs whose second op is slowed by a factor, half with each side second, is the ratio
// itself, where their median is not.
func TestPairedEstimates(t *testing.T) {
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median(4 1 3 2) = %v, want 2.5", got)
	}
	if got := Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("Median(3 1 2) = %v, want 2", got)
	}
	const r, f = 1.1, 3.0
	pairs := []float64{r * f, r / f, r * f, r / f, r * f, r / f}
	if got := GeoMean(pairs); got < r-1e-9 || got > r+1e-9 {
		t.Errorf("GeoMean of the pairs = %v, want %v", got, r)
	}
	if got := Median(pairs); got < 1.5 {
		t.Errorf("Median of the pairs = %v: the test's pairs no longer show what GeoMean is for", got)
	}
}
