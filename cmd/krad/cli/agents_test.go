package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/testbin"
	"github.com/krad-ade/krad/local"
)

const agentsProg = "/opt/krad-ade/krad-ade-agents"

// TestRun runs real commands under krad-ade-agents run, with a test app behind the bus, and
// checks their exit codes, their output and the reports the app got.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "script")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\necho hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantOut  string
		wantErr  string
		wantCode int
		want     []string // the reports the app got
	}{
		{name: "exit 3", args: []string{"sh", "-c", "exit 3"}, wantCode: 3, want: []string{
			`{"Report":{"state":"working","lifecycle":true}}`,
			`{"Report":{"state":"failed","lifecycle":true,"exit_code":3}}`}},
		{name: "true", args: []string{"true"}, want: []string{
			`{"Report":{"state":"working","lifecycle":true}}`,
			`{"Report":{"state":"done","lifecycle":true,"exit_code":0}}`}},
		{name: "the terminal's input and output", args: []string{"sh", "-c", "cat; echo out; echo err >&2"}, stdin: "in\n",
			wantOut: "in\nout\n", wantErr: "err\n", want: []string{
				`{"Report":{"state":"working","lifecycle":true}}`,
				`{"Report":{"state":"done","lifecycle":true,"exit_code":0}}`}},
		{name: "killed by a signal", args: []string{"sh", "-c", "kill -TERM $$"}, wantCode: 128 + 15, want: []string{
			`{"Report":{"state":"working","lifecycle":true}}`,
			`{"Report":{"state":"failed","lifecycle":true,"exit_code":143}}`}},
		{name: "flags after -- are the command's", args: []string{"--title", "t", "--", "sh", "-c", "exit 0", "--help"}, want: []string{
			`{"Report":{"state":"working","lifecycle":true}}`,
			`{"Report":{"state":"done","lifecycle":true,"exit_code":0}}`}},
		{name: "command not found", args: []string{"krad-test-no-such-command", "x"}, wantCode: 127,
			wantErr: "krad-ade-agents: error: \"krad-test-no-such-command\": command not found\n",
			want:    []string{`{"Report":{"state":"failed","lifecycle":true,"exit_code":127}}`}},
		{name: "no such file", args: []string{filepath.Join(dir, "missing")}, wantCode: 127,
			wantErr: "krad-ade-agents: error: " + quote(filepath.Join(dir, "missing")) + ": command not found\n",
			want:    []string{`{"Report":{"state":"failed","lifecycle":true,"exit_code":127}}`}},
		{name: "not executable", args: []string{notExecutable}, wantCode: 126,
			wantErr: "krad-ade-agents: error: " + quote(notExecutable) + ": cannot run: permission denied\n",
			want:    []string{`{"Report":{"state":"failed","lifecycle":true,"exit_code":126}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &testApp{role: local.RoleTerminal}
			env, _ := startApp(t, app)
			args := tt.args
			if !slices.Contains(args, "--") {
				args = append([]string{"--"}, args...)
			}
			out, errOut, code := runAs(t, agentsProg, env, strings.NewReader(tt.stdin), append([]string{"run"}, args...)...)
			if out != tt.wantOut || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("got stdout %q, stderr\n%s\nexit code %d; want %q, stderr\n%s\nexit code %d", out, errOut, code, tt.wantOut, tt.wantErr, tt.wantCode)
			}
			var want []string
			for _, r := range tt.want {
				want = append(want, "Terminal main:4 "+r)
			}
			if got := app.requests(); !slices.Equal(got, want) {
				t.Errorf("the app got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestRunWithoutTheApp: a report that cannot be made never stops or holds up the command; it is
// one warning line.
func TestRunWithoutTheApp(t *testing.T) {
	hanging := &testApp{hang: true, role: local.RoleTerminal}
	hangingEnv, _ := startApp(t, hanging)
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // the warning, without its end when it holds an address
		maxTook time.Duration
	}{
		{"outside the app", nil,
			"krad-ade-agents: warning: KRAD_ADE_TERMINAL is not set, so this is not one of krad-ade's terminals: the command runs without state reports\n",
			time.Second},
		{"nothing answers", map[string]string{varEndpoint: deadEndpoint(t), varToken: newToken(t).Reveal(), varTerminal: "main:4"},
			"krad-ade-agents: warning: the state working did not reach krad-ade, and the command runs on without reports: no agents bus answers at ",
			time.Second},
		{"no token", map[string]string{varEndpoint: deadEndpoint(t), varTerminal: "main:4"},
			"krad-ade-agents: warning: the command runs without state reports: KRAD_ADE_ENDPOINT is set, but neither KRAD_ADE_TOKEN nor KRAD_ADE_TOKEN_FILE is\n",
			time.Second},
		{"the app does not answer", hangingEnv,
			"krad-ade-agents: warning: the state working did not reach krad-ade, and the command runs on without reports: Report: no answer from the app at " + hangingEnv[varEndpoint] + " within 2s\n",
			reportWait + time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := runAs(t, agentsProg, tt.env, nil, "run", "--", "sh", "-c", "echo ran; exit 3")
			took := time.Since(start)
			if out != "ran\n" || code != 3 {
				t.Errorf("got stdout %q, exit code %d; want the command's output and exit code 3", out, code)
			}
			if !strings.HasPrefix(errOut, tt.wantErr) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("got stderr\n%s\nwant one line that starts\n%s", errOut, tt.wantErr)
			}
			if took > tt.maxTook {
				t.Errorf("took %s, want at most %s", took, tt.maxTook)
			}
		})
	}
	if got := hanging.requests(); len(got) != 1 {
		t.Errorf("the hanging app got %q, want the working report alone: after one failed report, run tries no other", got)
	}
}

// stubExec replaces execShell for one test and returns what it was called with.
func stubExec(t *testing.T, fail ...string) *[]string {
	t.Helper()
	var calls []string
	old := execShell
	execShell = func(path string, argv []string, env []string) error {
		for _, f := range fail {
			if path == f {
				return os.ErrPermission
			}
		}
		terminal := "unset"
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, varTerminal+"="); ok {
				terminal = v
			}
		}
		calls = append(calls, path+" "+strings.Join(argv, " ")+" "+varTerminal+"="+terminal)
		return nil
	}
	t.Cleanup(func() { execShell = old })
	return &calls
}

func TestShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	t.Run("KRAD_ADE_TERMINAL set: the shell at once", func(t *testing.T) {
		calls := stubExec(t)
		t.Setenv(varTerminal, "main:4")
		_, errOut, code := runAs(t, agentsProg, map[string]string{varTerminal: "main:4", "SHELL": sh, "TMUX": "/nonexistent,1,0"}, nil, "shell")
		if want := []string{sh + " " + sh + " " + varTerminal + "=main:4"}; !slices.Equal(*calls, want) || errOut != "" || code != 0 {
			t.Errorf("got exec %q, stderr %q, exit code %d; want exec %q", *calls, errOut, code, want)
		}
	})
	t.Run("not in tmux: a warning, and the shell", func(t *testing.T) {
		calls := stubExec(t)
		_, errOut, code := runAs(t, agentsProg, map[string]string{"SHELL": sh}, nil, "shell")
		want := "krad-ade-agents: warning: the app did not number this window; krad commands here will not know their terminal\n"
		if len(*calls) != 1 || errOut != want || code != 0 {
			t.Errorf("got exec %q, stderr %q, exit code %d; want one exec and the warning", *calls, errOut, code)
		}
	})
	t.Run("no SHELL: /bin/sh", func(t *testing.T) {
		calls := stubExec(t)
		runAs(t, agentsProg, map[string]string{varTerminal: "main:4"}, nil, "shell")
		if len(*calls) != 1 || !strings.HasPrefix((*calls)[0], "/bin/sh /bin/sh ") {
			t.Errorf("got exec %q, want /bin/sh", *calls)
		}
	})
	t.Run("a SHELL that cannot start: /bin/sh", func(t *testing.T) {
		calls := stubExec(t, "/nonexistent/zsh")
		_, errOut, _ := runAs(t, agentsProg, map[string]string{varTerminal: "main:4", "SHELL": "/nonexistent/zsh"}, nil, "shell")
		if len(*calls) != 1 || !strings.HasPrefix((*calls)[0], "/bin/sh /bin/sh ") || !strings.HasPrefix(errOut, `krad-ade-agents: warning: cannot start SHELL="/nonexistent/zsh"`) {
			t.Errorf("got exec %q, stderr %q; want /bin/sh after a warning", *calls, errOut)
		}
	})
}

// TestShellNumberedByTmux starts a real tmux server and plays the app: it sets @krad_terminal on
// the window a little after krad-ade-agents shell starts asking, or never.
func TestShellNumberedByTmux(t *testing.T) {
	tmux := testbin.Need(t, "tmux", "tmux")
	socket := startTmux(t, tmux)
	pane := tmuxOut(t, tmux, socket, "display-message", "-p", "-t", "t", "#{pane_id}")
	env := map[string]string{"SHELL": "/bin/sh", "TMUX": socket + ",1,0", "TMUX_PANE": pane}

	t.Run("numbered late", func(t *testing.T) {
		calls := stubExec(t)
		go func() {
			time.Sleep(150 * time.Millisecond)
			_ = exec.Command(tmux, "-S", socket, "set-option", "-w", "-t", pane, api.WindowTerminalOption, "main:5").Run()
		}()
		_, errOut, code := runAs(t, agentsProg, env, nil, "shell")
		if want := []string{"/bin/sh /bin/sh " + varTerminal + "=main:5"}; !slices.Equal(*calls, want) || errOut != "" || code != 0 {
			t.Errorf("got exec %q, stderr %q, exit code %d; want exec %q", *calls, errOut, code, want)
		}
	})
	t.Run("never numbered", func(t *testing.T) {
		defer func(d time.Duration) { shellWait = d }(shellWait)
		shellWait = 300 * time.Millisecond
		if err := exec.Command(tmux, "-S", socket, "set-option", "-wu", "-t", pane, api.WindowTerminalOption).Run(); err != nil {
			t.Fatal(err)
		}
		calls := stubExec(t)
		start := time.Now()
		_, errOut, code := runAs(t, agentsProg, env, nil, "shell")
		want := "krad-ade-agents: warning: the app did not number this window; krad commands here will not know their terminal\n"
		if !slices.Equal(*calls, []string{"/bin/sh /bin/sh " + varTerminal + "=unset"}) || errOut != want || code != 0 {
			t.Errorf("got exec %q, stderr %q, exit code %d; want the shell without KRAD_ADE_TERMINAL, and the warning", *calls, errOut, code)
		}
		if took := time.Since(start); took < shellWait || took > shellWait+time.Second {
			t.Errorf("took %s, want about %s", took, shellWait)
		}
	})
}

// startTmux starts a tmux server on its own socket with one session, "t", and returns the
// socket.
func startTmux(t *testing.T, tmux string) string {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "tmux.sock")
	cmd := exec.Command(tmux, "-S", socket, "-f", "/dev/null", "new-session", "-d", "-s", "t", "sleep 600")
	cmd.Env = append(os.Environ(), "TMUX=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", socket, "kill-server").Run() })
	return socket
}

func tmuxOut(t *testing.T, tmux, socket string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), tmux, append([]string{"-S", socket}, args...)...).Output()
	if err != nil {
		t.Fatalf("tmux %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}
