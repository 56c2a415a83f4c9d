package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krad-ade/krad/access"
	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
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
			app := &testApp{role: access.RoleTerminal}
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
	hanging := &testApp{hang: true, role: access.RoleTerminal}
	hangingEnv, _ := startApp(t, hanging)
	// The bounds tell a command held up from one that was not: a report that waited would take
	// reportWait, or reportWait twice where the app hangs; a busy machine gets the rest.
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // the warning, without its end when it holds an address
		maxTook time.Duration
	}{
		{"outside the app", nil,
			"krad-ade-agents: warning: KRAD_ADE_TERMINAL is not set, so this is not one of krad-ade's terminals: the command runs without state reports\n",
			reportWait - time.Millisecond},
		{"nothing answers", map[string]string{varEndpoint: deadEndpoint(t), varToken: newToken(t).Reveal(), varTerminal: "main:4"},
			"krad-ade-agents: warning: the state working did not reach krad-ade, and the command runs on without reports: no agents bus answers at ",
			reportWait - time.Millisecond},
		{"no token", map[string]string{varEndpoint: deadEndpoint(t), varTerminal: "main:4"},
			"krad-ade-agents: warning: the command runs without state reports: KRAD_ADE_ENDPOINT is set, but neither KRAD_ADE_TOKEN nor KRAD_ADE_TOKEN_FILE is\n",
			reportWait - time.Millisecond},
		{"the app does not answer", hangingEnv,
			"krad-ade-agents: warning: the state working did not reach krad-ade, and the command runs on without reports: Report: no answer from the app at " + hangingEnv[varEndpoint] + " within 2s\n",
			2*reportWait - time.Millisecond},
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

// TestRunExec: with --exec, krad-ade-agents run reports the start and then becomes the command
// (execProgram, stubbed here; cmd/krad's TestRunExecBecomesTheCommand execs for real). It
// reports no end, but a command that cannot start is reported failed with a shell's code, as
// without --exec.
func TestRunExec(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	notExecutable := filepath.Join(dir, "script")
	if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\necho hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	working := `{"Report":{"state":"working","lifecycle":true}}`
	tests := []struct {
		name     string
		args     []string
		execErr  error // what the exec returns: nil is a command that started
		wantExec string
		wantErr  string
		wantCode int
		want     []string // the reports the app got
	}{
		{name: "started", args: []string{"sh", "-c", "exit 3"}, wantExec: sh + " sh -c exit 3", want: []string{working}},
		{name: "flags after -- are the command's", args: []string{"--title", "t", "--", "sh", "--help"},
			wantExec: sh + " sh --help", want: []string{working}},
		{name: "command not found", args: []string{"krad-test-no-such-command"}, wantCode: 127,
			wantErr: "krad-ade-agents: error: \"krad-test-no-such-command\": command not found\n",
			want:    []string{`{"Report":{"state":"failed","lifecycle":true,"exit_code":127}}`}},
		{name: "not executable", args: []string{notExecutable}, wantCode: 126,
			wantErr: "krad-ade-agents: error: " + quote(notExecutable) + ": cannot run: permission denied\n",
			want:    []string{`{"Report":{"state":"failed","lifecycle":true,"exit_code":126}}`}},
		{name: "no interpreter", args: []string{"sh"}, execErr: syscall.ENOENT, wantExec: sh + " sh", wantCode: 127,
			wantErr: "krad-ade-agents: error: \"sh\": cannot run: no such file or directory\n",
			want:    []string{working, `{"Report":{"state":"failed","lifecycle":true,"exit_code":127}}`}},
		{name: "exec format error", args: []string{"sh"}, execErr: syscall.ENOEXEC, wantExec: sh + " sh", wantCode: 126,
			wantErr: "krad-ade-agents: error: \"sh\": cannot run: exec format error\n",
			want:    []string{working, `{"Report":{"state":"failed","lifecycle":true,"exit_code":126}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &testApp{role: access.RoleTerminal}
			env, _ := startApp(t, app)
			var calls []string
			var envOK bool
			old := execProgram
			execProgram = func(path string, argv []string, env []string) error {
				calls = append(calls, path+" "+strings.Join(argv, " "))
				// The command's environment is the process's own, whole.
				envOK = slices.Equal(env, os.Environ())
				// The start was reported before the command replaced krad-ade-agents.
				if got := app.requests(); len(got) != 1 || !strings.HasSuffix(got[0], working) {
					t.Errorf("at the exec the app had %q, want the start alone", got)
				}
				return tt.execErr
			}
			defer func() { execProgram = old }()
			args := tt.args
			if !slices.Contains(args, "--") {
				args = append([]string{"--"}, args...)
			}
			_, errOut, code := runAs(t, agentsProg, env, nil, append([]string{"run", "--exec"}, args...)...)
			var wantCalls []string
			if tt.wantExec != "" {
				wantCalls = []string{tt.wantExec}
			}
			if !slices.Equal(calls, wantCalls) || len(calls) > 0 && !envOK {
				t.Errorf("exec'd %q (the process's environment: %v), want %q", calls, envOK, wantCalls)
			}
			if errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("got stderr\n%s\nexit code %d; want stderr\n%s\nexit code %d", errOut, code, tt.wantErr, tt.wantCode)
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
	t.Run("a report that cannot be made", func(t *testing.T) {
		hanging := &testApp{hang: true, role: access.RoleTerminal}
		env, _ := startApp(t, hanging)
		calls := stubExec(t)
		start := time.Now()
		_, errOut, code := runAs(t, agentsProg, env, nil, "run", "--exec", "--", "sh", "-c", "exit 3")
		want := "krad-ade-agents: warning: the state working did not reach krad-ade, and the command runs on without reports: Report: no answer from the app at " + env[varEndpoint] + " within 2s\n"
		if len(*calls) != 1 || errOut != want || code != 0 {
			t.Errorf("got exec %q, stderr\n%s\nexit code %d; want the exec after the warning\n%s", *calls, errOut, code, want)
		}
		// One report's wait, not two: the exec follows the failed working report at once.
		if took, bound := time.Since(start), 2*reportWait-time.Millisecond; took > bound {
			t.Errorf("the command started after %s, want under %s", took, bound)
		}
	})
}

// TestEnded runs krad-ade-agents ended as tmux's pane-died hook does, against a real tmux server
// whose window the app numbered: it reports the end as the window's terminal.
func TestEnded(t *testing.T) {
	tmux := testbin.Need(t, "tmux", "tmux")
	socket := startTmux(t, tmux)
	pane := tmuxOut(t, tmux, socket, "display-message", "-p", "-t", "t", "#{pane_id}")
	if err := exec.Command(tmux, "-S", socket, "set-option", "-w", "-t", pane, api.WindowTerminalOption, "main:5").Run(); err != nil {
		t.Fatal(err)
	}
	// A pane of a window the app did not number.
	stranger := tmuxOut(t, tmux, socket, "new-window", "-d", "-P", "-F", "#{pane_id}", "-t", "t:", "sleep 600")
	tests := []struct {
		name     string
		args     []string
		want     string // the report the app got; "" for none
		wantErr  string
		wantCode int
	}{
		{"exit 3", []string{pane, "3", ""}, `{"Report":{"state":"failed","lifecycle":true,"exit_code":3}}`, "", 0},
		{"exit 0", []string{pane, "0", ""}, `{"Report":{"state":"done","lifecycle":true,"exit_code":0}}`, "", 0},
		{"killed", []string{pane, "", "9"}, `{"Report":{"state":"failed","lifecycle":true,"exit_code":137}}`, "", 0},
		{"not numbered", []string{stranger, "0", ""}, "",
			"krad-ade-agents: error: the window of pane " + stranger + " is no terminal of krad-ade's (no @krad_terminal), or tmux did not say\n", ExitFailed},
		{"no status", []string{pane, "", ""}, "",
			"krad-ade-agents: error: give either an exit status or a signal, not \"\" and \"\"\nkrad-ade-agents: hint: run 'krad-ade-agents ended --help'\n", ExitUsage},
		{"not a pane", []string{"main:5", "0", ""}, "",
			"krad-ade-agents: error: \"main:5\" is not a tmux pane (%N)\nkrad-ade-agents: hint: run 'krad-ade-agents ended --help'\n", ExitUsage},
		{"status out of range", []string{pane, "256", ""}, "",
			"krad-ade-agents: error: exit status \"256\" is not a number from 0 to 255\nkrad-ade-agents: hint: run 'krad-ade-agents ended --help'\n", ExitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := &testApp{role: access.RoleTerminal}
			env, _ := startApp(t, app)
			// As tmux runs it: the session's variables, no KRAD_ADE_TERMINAL, TMUX.
			delete(env, varTerminal)
			env["TMUX"] = socket + ",1,0"
			out, errOut, code := runAs(t, agentsProg, env, nil, append([]string{"ended"}, tt.args...)...)
			if out != "" || errOut != tt.wantErr || code != tt.wantCode {
				t.Errorf("got stdout %q, stderr\n%s\nexit code %d; want stderr\n%s\nexit code %d", out, errOut, code, tt.wantErr, tt.wantCode)
			}
			var want []string
			if tt.want != "" {
				want = []string{"Terminal main:5 " + tt.want}
			}
			if got := app.requests(); !slices.Equal(got, want) {
				t.Errorf("the app got %q, want %q", got, want)
			}
		})
	}
}

// FuzzEndedArgs: of what tmux hands krad-ade-agents ended, a pane is % and digits, and an end is
// an exit status from 0 to 255 or a signal from 1 to 127 (the other empty), in digits alone; its
// code is the status, or 128 plus the signal.
func FuzzEndedArgs(f *testing.F) {
	f.Add("%3", "0", "")
	f.Add("%12", "", "9")
	f.Add("%", "+5", "")
	f.Add("%-1", "", "0128")
	f.Fuzz(func(t *testing.T, pane, status, signal string) {
		digits := func(s string) bool {
			return s != "" && strings.Trim(s, "0123456789") == ""
		}
		if paneID(pane) && (pane[0] != '%' || !digits(pane[1:])) {
			t.Errorf("paneID(%q) is true", pane)
		}
		code, err := paneEndCode(status, signal)
		if err != nil {
			return
		}
		switch {
		case digits(status) && signal == "":
			if n, _ := strconv.Atoi(status); n != code || code > 255 {
				t.Errorf("paneEndCode(%q, %q) = %d", status, signal, code)
			}
		case digits(signal) && status == "":
			if n, _ := strconv.Atoi(signal); n+128 != code || n < 1 || n > 127 {
				t.Errorf("paneEndCode(%q, %q) = %d", status, signal, code)
			}
		default:
			t.Errorf("paneEndCode(%q, %q) = %d, want an error", status, signal, code)
		}
	})
}

// stubExec replaces execProgram for one test and returns what it was called with.
func stubExec(t *testing.T, fail ...string) *[]string {
	t.Helper()
	var calls []string
	old := execProgram
	execProgram = func(path string, argv []string, env []string) error {
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
	t.Cleanup(func() { execProgram = old })
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
		// Under the default wait (5 s), which would say that the shorter one was not used.
		if took := time.Since(start); took < shellWait || took > shellWait+3*time.Second {
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
	var stderr strings.Builder
	cmd := exec.CommandContext(context.Background(), tmux, append([]string{"-S", socket}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tmux %v: %v: %s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
