package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/remote"
	"github.com/krad-ade/krad/remote/sshdtest"
)

func TestRun(t *testing.T) {
	srv := sshdtest.Start(t, sshdtest.Options{})
	testRun(t, remote.SSH(srv.Dial(t)), "on the host")
}

// TestLocal: Local runs what SSH runs, with the same limits and errors, on this computer.
func TestLocal(t *testing.T) {
	testRun(t, remote.Local(nil), "on this computer")
}

// testRun checks a Host: where is how its errors say where the command ran.
func testRun(t *testing.T, h remote.Host, where string) {
	ctx := context.Background()

	t.Run("stdin to stdout", func(t *testing.T) {
		out, err := h.Run(ctx, "tr a-z A-Z", strings.NewReader("hello\n"))
		if err != nil || string(out) != "HELLO\n" {
			t.Errorf("got %q, %v; want %q", out, err, "HELLO\n")
		}
	})

	t.Run("exit status and stderr", func(t *testing.T) {
		out, err := h.Run(ctx, "echo partial; echo 'mkdir: No space left' >&2; exit 3", nil)
		var ee *remote.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("got %v, want an *ExitError", err)
		}
		if ee.Status != 3 || string(ee.Stderr) != "mkdir: No space left\n" || ee.Truncated {
			t.Errorf("got %+v, want status 3 and the stderr", ee)
		}
		if want := "exit status 3 " + where + ": mkdir: No space left"; err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
		if string(out) != "partial\n" {
			t.Errorf("got stdout %q, want what the command printed before it failed", out)
		}
	})

	t.Run("stderr capped and escaped", func(t *testing.T) {
		_, err := h.Run(ctx, `printf '\033[31mred\n'; head -c 100000 /dev/zero | tr '\0' x >&2; exit 1`, nil)
		var ee *remote.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("got %v, want an *ExitError", err)
		}
		if len(ee.Stderr) != remote.MaxStderr || !ee.Truncated {
			t.Errorf("got %d bytes of stderr, truncated %v; want %d, truncated", len(ee.Stderr), ee.Truncated, remote.MaxStderr)
		}
		if msg := err.Error(); len(msg) > 600 {
			t.Errorf("the message is %d bytes long", len(msg))
		}
		_, err = h.Run(ctx, `printf 'a\033[2Jb\n' >&2; exit 1`, nil)
		if msg := err.Error(); strings.Contains(msg, "\x1b") || !strings.Contains(msg, `a\x1b[2Jb`) {
			t.Errorf("got %q, want the escape sequence escaped", msg)
		}
	})

	t.Run("stdout limit", func(t *testing.T) {
		for _, cmd := range []string{"head -c 2000000 /dev/zero", "yes"} {
			_, err := h.Run(ctx, cmd, nil)
			if !errors.Is(err, remote.ErrStdoutTooLong) {
				t.Errorf("%s: got %v, want ErrStdoutTooLong", cmd, err)
			}
		}
	})

	t.Run("signal", func(t *testing.T) {
		_, err := h.Run(ctx, "kill -KILL $$", nil)
		var ee *remote.ExitError
		if !errors.As(err, &ee) || ee.Signal != "KILL" {
			t.Errorf("got %v, want an *ExitError for signal KILL", err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		stdin, _ := io.Pipe() // never written, never closed: only the cancel ends the command
		mark := fmt.Sprintf("krad-cancel-%d", time.Now().UnixNano())
		_, err := h.Run(ctx, "sh -c 'cat; sleep 0' "+mark, stdin)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Run returned %v after the cancel, want at once", d)
		}
		// The command on the host reads end of file, and ends.
		for deadline := time.Now().Add(5 * time.Second); len(processesWith(t, mark)) > 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the command still runs on the host 5s after the cancel: pids %v", processesWith(t, mark))
			}
		}
		// The connection still serves other commands.
		if out, err := h.Run(context.Background(), "echo still", nil); err != nil || string(out) != "still\n" {
			t.Errorf("after a cancel: got %q, %v", out, err)
		}
	})

	t.Run("canceled before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := h.Run(ctx, "echo no", nil); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
}

// processesWith lists the pids of this machine's processes (the host, in these tests) whose
// command line holds s.
func processesWith(t *testing.T, s string) []string {
	t.Helper()
	files, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}
