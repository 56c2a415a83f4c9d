package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// Env gives the value of an environment variable, "" when it is unset: os.Getenv, or [MapEnv].
type Env func(key string) string

// MapEnv is an Env that reads m, for tests.
func MapEnv(m map[string]string) Env { return func(key string) string { return m[key] } }

// Options are what the two builds of krad differ in.
type Options struct {
	// Discover finds the bus through api.json when the KRAD_ADE_* variables are not set. nil
	// means the variables only: the static build for SSH hosts, which must not link the
	// discovery code.
	Discover func(getenv func(string) string) (Discovered, error)
	// Version is krad's version; "" means the module version from the build information.
	Version string
	// MCP serves krad mcp in this process: the bus as an MCP server on stdin and stdout (package
	// mcpserve's Serve). nil means the static build for SSH hosts, which must not link the MCP
	// SDK: its krad mcp relays to one the app runs for it (the MCP request).
	MCP func(ctx context.Context, cfg MCPConfig, stdin io.Reader, stdout io.Writer) error
	// Bus, when set, is the bus to call, as it is: the app's own krad mcp for a host's, whose
	// client reaches the bus the way the host's requests do. nil means the variables, or
	// Discover.
	Bus *api.Client
}

// Discovered is what [Options.Discover] found in api.json.
type Discovered struct {
	// Path is the api.json it read. Discover sets it even when it fails, once it knows where it
	// looked, so that krad can tell the user.
	Path     string
	Endpoint string
	Token    api.Token
	PID      int
}

// agentsName is the name under which the executable is the agents' companion.
const agentsName = "krad-ade-agents"

// Run runs one command line and returns the process's exit code (see the package documentation).
// args is the whole command line, program name first, as in os.Args: called as krad-ade-agents,
// Run is the agents' companion; called by any other name, it is krad. env nil is an empty
// environment. stdin is for commands that read input.
func Run(ctx context.Context, args []string, env Env, stdin io.Reader, stdout, stderr io.Writer, opts Options) int {
	if env == nil {
		env = MapEnv(nil)
	}
	root := kradCommand()
	askpass := len(args) > 0 && programName(args[0]) == AskpassName
	if len(args) > 0 && programName(args[0]) == agentsName {
		root = agentsCommand()
	} else {
		env = withWindowTerminal(ctx, env)
	}
	if len(args) > 0 {
		args = args[1:]
	}
	x := &invocation{ctx: ctx, env: env, stdin: stdin, stdout: stdout, stderr: stderr, opts: opts, prog: root.name}
	var err error
	if askpass {
		x.prog = AskpassName
		err = x.runAskpass(args)
	} else {
		err = x.dispatch(root, args)
	}
	if err != nil && !silent(err) {
		_, _ = io.WriteString(stderr, errorLines(x.prog, err))
	}
	return exitCode(err)
}

// errorLines is what krad prints for err: "krad: error: …", then "krad: hint: …" when err has a
// hint. krad mcp gives a model the same lines.
func errorLines(prog string, err error) string {
	s := fmt.Sprintf("%s: error: %s\n", prog, termsafe.Escape(err.Error(), maxLine))
	if hint := hintOf(err); hint != "" {
		s += fmt.Sprintf("%s: hint: %s\n", prog, termsafe.Escape(hint, maxLine))
	}
	return s
}

// windowWait is how long krad waits for the app to number the window it runs in, when it has to
// learn its terminal from the window: a command run as a window opens can come before the app.
var windowWait = time.Second

// withWindowTerminal is env, but with KRAD_ADE_TERMINAL learned from the tmux window (see
// windowTerminal) when it is unset while KRAD_ADE_ENDPOINT is set: a window a person opened
// with a command (tmux new-window 'bash') gets the session's variables, KRAD_ADE_ENDPOINT among
// them, but not KRAD_ADE_TERMINAL, which is the window's own. tmux is asked at most once, and
// only when a command reads the variable.
func withWindowTerminal(ctx context.Context, env Env) Env {
	var once sync.Once
	var learned string
	return func(key string) string {
		v := env(key)
		if key != varTerminal || v != "" || env(varEndpoint) == "" {
			return v
		}
		once.Do(func() { learned, _ = windowTerminal(ctx, env, windowWait) })
		return learned
	}
}

// programName is the name the executable was called by, without folder or .exe.
func programName(arg0 string) string {
	return strings.TrimSuffix(filepath.Base(arg0), ".exe")
}

// invocation is one run of a command: where it reads and writes, and what it was called as.
type invocation struct {
	ctx            context.Context
	env            Env
	stdin          io.Reader
	stdout, stderr io.Writer
	opts           Options
	prog           string // krad or krad-ade-agents, the prefix of error lines
	path           string // the command's full name: "krad api info"
	json           bool   // --json, for a command that has it ([command.json])
}

// bus finds the agents bus for this invocation.
func (x *invocation) bus() (*bus, error) {
	if x.opts.Bus != nil {
		return &bus{client: *x.opts.Bus, home: x.env("HOME")}, nil
	}
	return findBus(x.env, x.opts.Discover)
}

// usageError is bad flags or arguments: exit code 5, with a hint to the command's help.
func (x *invocation) usageError(format string, args ...any) error {
	return &problem{err: fmt.Errorf(format, args...), kind: errUsage, hint: "run '" + x.path + " --help'"}
}

// noArgs refuses arguments to a command that takes none.
func (x *invocation) noArgs(args []string) error {
	if len(args) > 0 {
		return x.usageError("%s takes no arguments, and %s is not one of its commands", x.path, quote(args[0]))
	}
	return nil
}

// busNoArgs is noArgs and then the bus, for a command that takes no arguments.
func (x *invocation) busNoArgs(args []string) (*bus, error) {
	if err := x.noArgs(args); err != nil {
		return nil, err
	}
	return x.bus()
}

// warn prints one warning line: something went wrong that does not stop the command.
func (x *invocation) warn(format string, args ...any) {
	fmt.Fprintf(x.stderr, "%s: warning: %s\n", x.prog, termsafe.Escape(fmt.Sprintf(format, args...), maxLine))
}
