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
