package appmain

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/krad-ade/krad/internal/version"
)

// TestFlags: what krad-ade's flags print and exit with before it starts anything: --help and
// --version on stdout with 0, and a usage error with its hint on stderr with 5.
func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		code   int
		stdout string // a line it must hold
		stderr string // the whole of it
	}{
		{args: []string{"--help"}, stdout: "Usage: krad-ade [flags]"},
		{args: []string{"-h"}, stdout: "--lead CMD"},
		{args: []string{"--version"}, stdout: "krad-ade " + version.Build + " (agents API v1)"},
		{args: []string{"serve"}, code: 5,
			stderr: "krad-ade: error: krad-ade takes no arguments, got 1\nkrad-ade: hint: run krad-ade --help\n"},
		{args: []string{"--log-level", "loud"}, code: 5,
			stderr: "krad-ade: error: --log-level must be debug, info, warn or error\nkrad-ade: hint: run krad-ade --help\n"},
		{args: []string{"--colour"}, code: 5,
			stderr: "krad-ade: error: unknown flag: --colour\nkrad-ade: hint: run krad-ade --help\n"},
	} {
		var stdout, stderr bytes.Buffer
		getenv := func(string) string { return "" }
		code := Run(context.Background(), tt.args, getenv, &stdout, &stderr)
		if code != tt.code {
			t.Errorf("krad-ade %s: exit %d, want %d (stderr %q)", strings.Join(tt.args, " "), code, tt.code, stderr.String())
		}
		if !strings.Contains(stdout.String(), tt.stdout) {
			t.Errorf("krad-ade %s: stdout %q, want it to hold %q", strings.Join(tt.args, " "), stdout.String(), tt.stdout)
		}
		if stderr.String() != tt.stderr {
			t.Errorf("krad-ade %s: stderr %q, want %q", strings.Join(tt.args, " "), stderr.String(), tt.stderr)
		}
	}
}
