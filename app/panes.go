package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
	"github.com/krad-ade/krad/remote/shell"
	"github.com/krad-ade/krad/tmux"
)

// The tmux plumbing of an environment: the formats the app asks tmux for, the command lines it
// sends about windows and panes, and the parsers of what tmux answers, each written once. What
// those answers hold is outside input on an SSH host: every value goes through readback.go's
// bounds, and every parser here has a fuzz target (panes_test.go). env.go decides what to do
// with them.

// The window and session options the app writes, besides api.WindowTerminalOption.
const (
	metaOption = "@krad"      // a window's windowMeta, as JSON on one line
	nextOption = "@krad_next" // the session's next terminal number
)

// deadFormat is what tmux says of a pane's process: "1 STATUS SIGNAL" once it has exited (STATUS
// and SIGNAL empty while tmux has not collected it, one of them set once it has), "0  " while it
// runs. It is three fields, split at spaces; parseDead reads them.
const deadFormat = "#{pane_dead} #{pane_dead_status} #{pane_dead_signal}"

// deadSubscription is the name of the control-mode subscription that reports pane deaths: tmux
// says deadFormat of every pane of the session whenever it changes (%subscription-changed).
const deadSubscription = "krad-dead"

// endedHook is the app's entry in the array of hooks tmux runs when a pane's process ends and its
// pane stays (pane-died): the server's global one, so that it applies to every environment's
// session, at an index of its own, so that a pane-died hook of the person's (from their
// ~/.tmux.conf) stays beside it and the app's next setup replaces its own entry only.
const endedHook = "pane-died[7105]"

// endedHookCommand is the app's pane-died hook (endedHook): tmux runs `krad-ade-agents ended`
// (companion is its path) with the dead pane and how its process ended, which reports the end to
// the app at once; the krad-dead subscription would tell it at tmux's next check of
// subscriptions, up to a second later. tmux runs the hook once it knows the exit status. run-shell
// -b runs the line with /bin/sh without holding up tmux's queue of commands, after expanding its
// formats: what they give is tmux's own (a pane id, numbers), and the companion's path is a
// literal to both tmux and sh. run-shell shows a command's output, and a failure's exit status,
// on the screen of a pane: the line has neither.
func endedHookCommand(companion string) string {
	line := tmux.FormatLiteral(shell.Quote(companion)) +
		" ended '#{pane_id}' '#{pane_dead_status}' '#{pane_dead_signal}' </dev/null >/dev/null 2>&1 || :"
	return "run-shell -b " + tmux.Quote(line)
}

// isHolder is a format that tmux expands to 1 for the holder window, 0 for any other.
const isHolder = "#{==:#{window_name}," + HolderName + "}"

// nameFormat is a window's name with each control character made a space.
const nameFormat = "#{s/[\x01-\x1f\x7f]/ /:window_name}"

// paneEnd is what deadFormat says of a pane.
type paneEnd struct {
	dead  bool
	code  int  // the exit code (deadStatus): -1 unless known, and for a status out of range
	known bool // tmux collected the process and told how it ended
}

// parseDead reads deadFormat's fields, f: its three, split at spaces (any after them are left
// alone). Fewer than three, or a first that is not 1, is a live pane. The error is deadStatus's,
// for a status or signal out of range, read whether the pane is dead or not: the end it returns
// then has code -1 and known set.
func parseDead(f []string) (paneEnd, error) {
	if len(f) < 3 {
		return paneEnd{code: -1}, nil
	}
	code, known, err := deadStatus(f[1], f[2])
	return paneEnd{dead: f[0] == "1", code: code, known: known}, err
}

// setupCommands are the commands that make session fit for the app (setup), v being what its
// terminals get: exit status and last screen kept, windows never renumbered, the variables every
// new window gets (windows a person opens included), the companion as the command of those
// windows, and the subscription that reports pane deaths.
func setupCommands(session string, v HostVars) [][]string {
	cmds := [][]string{
		{"set-option", "-gw", "remain-on-exit", "on"},
		// Terminal N is window N: tmux must not renumber windows when one closes, whatever the
		// user's configuration says.
		{"set-option", "-t", session, "renumber-windows", "off"},
	}
	set, unset := v.Session()
	for _, kv := range set {
		name, value, _ := strings.Cut(kv, "=")
		cmds = append(cmds, []string{"set-environment", "-t", session, name, value})
	}
	for _, name := range unset {
		cmds = append(cmds, []string{"set-environment", "-t", session, "-r", name})
	}
	return append(cmds,
		[]string{"set-option", "-t", session, "default-command", shell.Quote(v.companion()) + " shell"},
		[]string{"refresh-client", "-C", "200x50"},
		[]string{"refresh-client", "-B", deadSubscription + ":%*:" + deadFormat},
	)
}

// windowMeta is what the app keeps in a window's @krad option, so that a restarted app adopts
// the window with its number, role and session. parseMeta reads it back.
type windowMeta struct {
	Terminal int      `json:"terminal"`
	Title    string   `json:"title"`
	Role     api.Role `json:"role"`
	Session  string   `json:"session,omitempty"`
	Group    string   `json:"group,omitempty"`
	Lead     int      `json:"lead,omitempty"`
	Runs     bool     `json:"runs,omitempty"`
	// Spec is the configured terminal the window was opened for, so that a restarted app does
	// not open it again.
	Spec string `json:"spec,omitempty"`
	// Ask is the hash of the window's askpass key (askHash), "" for a window the app gave none
	// (one a person opened): with it a restarted app proves the window's git prompts, and the
	// key itself is kept nowhere but in the window's environment.
	Ask string `json:"ask,omitempty"`
}

// windowLineFormat is adopt's list-windows format: one line a window, which no window's name can
// forge. The name is not in it (a name may hold spaces, tabs, newlines, anything): the holder is
// told by comparing names inside tmux, and a terminal's title is in its @krad. @krad comes last,
// as the rest of the line: the app writes it, as JSON on one line, which may hold spaces.
const windowLineFormat = "#{window_id} #{pane_id} " + deadFormat + " " + isHolder + " #{" + metaOption + "}"

type windowLine struct {
	window tmux.WindowID
	pane   tmux.PaneID
	end    paneEnd
	holder bool
	meta   *windowMeta // nil for a window without @krad, or with one the app refuses
	// metaErr says why the window's @krad was refused, statusErr why its exit status was.
	metaErr, statusErr error
}

// parseWindowLine reads one line of adopt's list-windows (windowLineFormat) of environment env's
// session. Its error is for a line it cannot read at all; a window whose @krad or exit status is
// out of range is read without them, and says why in metaErr and statusErr.
func parseWindowLine(line, env string) (windowLine, error) {
	f := strings.SplitN(line, " ", 7)
	if len(f) < 7 {
		return windowLine{}, fmt.Errorf("%d fields, want 7", len(f))
	}
	var w windowLine
	var err error
	if w.window, err = tmux.ParseWindowID(f[0]); err != nil {
		return w, err
	}
	if w.pane, err = tmux.ParsePaneID(f[1]); err != nil {
		return w, err
	}
	w.end, w.statusErr = parseDead(f[2:5])
	w.holder = f[5] == "1"
	w.meta, w.metaErr = parseMeta(f[6], env)
	return w, nil
}

// windowIndexFormat is windows' list-windows format: a window, its index, and whether it is the
// holder.
const windowIndexFormat = "#{window_id} #{window_index} " + isHolder

// parseIndexLine reads one line of windowIndexFormat.
func parseIndexLine(line string) (w tmux.WindowID, index int, holder bool, err error) {
	f := strings.SplitN(line, " ", 3)
	if len(f) < 3 {
		return 0, 0, false, fmt.Errorf("%d fields, want 3", len(f))
	}
	if w, err = tmux.ParseWindowID(f[0]); err != nil {
		return 0, 0, false, err
	}
	if index, err = parseIndex(f[1]); err != nil {
		return 0, 0, false, err
	}
	return w, index, f[2] == "1", nil
}

// sessionWindows is where the session's windows are: listed once by windows, then kept up to date
// by the app's own moves, so that a pass over many windows (adopt's, numbering's) lists them once
// rather than once a window. It is used under e.createMu, which every move of the app's is made
// under; a window a person opens or moves meanwhile is not in it, and a move onto its index fails
// (tmux refuses an index in use) rather than replace it.
type sessionWindows struct {
	order  []tmux.WindowID // as tmux listed them
	index  map[tmux.WindowID]int
	at     map[int]tmux.WindowID
	holder map[tmux.WindowID]bool
}

// moved records that window w is now at index i.
func (ws *sessionWindows) moved(w tmux.WindowID, i int) {
	if old, ok := ws.index[w]; ok && ws.at[old] == w {
		delete(ws.at, old)
	}
	ws.index[w] = i
	ws.at[i] = w
}

// windows lists the session's windows, with their indexes. A line it cannot read is left out: one
// warning counts them for the reply, and the windows it could read are what it returns.
func (e *environment) windows(ctx context.Context, c *tmux.Client) (*sessionWindows, error) {
	out, err := c.Command(ctx, "list-windows", "-t", e.name, "-F", windowIndexFormat)
	if err != nil {
		return nil, fmt.Errorf("tmux list-windows: %w", err)
	}
	ws := &sessionWindows{index: make(map[tmux.WindowID]int, len(out)), at: make(map[int]tmux.WindowID, len(out)), holder: map[tmux.WindowID]bool{}}
	var unreadable problems
	for _, line := range out {
		w, i, holder, err := parseIndexLine(line)
		if err != nil {
			unreadable.add(err)
			continue
		}
		if _, dup := ws.index[w]; dup {
			unreadable.add(fmt.Errorf("window %s listed twice", w))
			continue
		}
		ws.order = append(ws.order, w)
		ws.moved(w, i)
		if holder {
			ws.holder[w] = true
		}
	}
	unreadable.warn(e, "tmux listed windows the app cannot read")
	return ws, nil
}

// moveWindow moves window w of the session to index i; the index must be free. The window the
// session shows stays the one it shows: a window a person just opened with prefix c, which tmux
// made the current one, is still what their client shows once it has its number (move-window -d
// would leave the session on the window before it, where their next command would run).
func (e *environment) moveWindow(ctx context.Context, c *tmux.Client, w tmux.WindowID, i int) error {
	out, err := c.Command(ctx, "display-message", "-p", "-t", w.String(), "#{window_active}")
	if err != nil {
		return fmt.Errorf("tmux display-message: %w", err)
	}
	args := []string{"move-window", "-d", "-s", w.String(), "-t", e.name + ":" + strconv.Itoa(i)}
	if len(out) == 1 && out[0] == "1" {
		args = slices.Delete(args, 1, 2) // selected where it lands, as it was where it stood
	}
	if _, err := c.Command(ctx, args...); err != nil {
		return fmt.Errorf("tmux move-window: %w", err)
	}
	return nil
}

// strangerFormat is what numbering asks of a window a person opened: its pane, whether it is the
// holder, and its name. The name comes last, its control characters made spaces by tmux, so that
// it is one line whatever it holds.
const strangerFormat = "#{pane_id} " + isHolder + " " + nameFormat

// parseStranger reads display-message's answer to strangerFormat. The lines are joined all the
// same, should tmux's regular expressions stop at bytes that are not UTF-8. For the holder it
// reads nothing else.
func parseStranger(out []string) (p tmux.PaneID, holder bool, name string, err error) {
	ps, rest, _ := strings.Cut(strings.Join(out, "\n"), " ")
	h, name, _ := strings.Cut(rest, " ")
	if h == "1" {
		return 0, true, "", nil
	}
	if p, err = tmux.ParsePaneID(ps); err != nil {
		return 0, false, "", err
	}
	return p, false, name, nil
}

// newWindowArgs is the new-window command of terminal id, opened as s, with the variables v: at
// the window index of its number (prefix-N shows terminal N), running the command through
// krad-ade-agents run --exec, or the user's shell. run reports the start and becomes the
// command, which is then the window's own process: tmux tells its end (the app's pane-died hook,
// the krad-dead subscription), and no process of ours stays beside it. -n and -c are formats to tmux: the
// title and the folder go as text (tmux.FormatLiteral); the -e values and the command are not
// expanded. tmux answers with newWindowFormat.
func newWindowArgs(session string, id api.TerminalID, s windowSpec, v HostVars) []string {
	target := session + ":" + strconv.Itoa(id.Terminal)
	args := []string{"new-window", "-d", "-P", "-F", newWindowFormat, "-t", target, "-n", tmux.FormatLiteral(s.title)}
	for _, kv := range v.Env(id) {
		args = append(args, "-e", kv)
	}
	if !s.askKey.IsZero() {
		args = append(args, "-e", api.VarAskpassKey+"="+s.askKey.Reveal())
	}
	for _, kv := range api.GroupEnv(s.group, s.port) {
		args = append(args, "-e", kv)
	}
	if dir := cmp.Or(s.dir, v.Dir); dir != "" {
		args = append(args, "-c", tmux.FormatLiteral(dir))
	}
	argv := s.argv
	if len(argv) == 0 && s.setup {
		// The user's shell, once the group is set up: run runs the setup first.
		argv = []string{"sh", "-c", `exec "${SHELL:-/bin/sh}"`}
	}
	if len(argv) == 0 {
		return append(args, "--", v.companion(), "shell")
	}
	args = append(args, "--", v.companion(), "run", "--exec", "--title", s.title)
	if s.setup {
		args = append(args, "--setup")
	}
	return append(append(args, "--"), argv...)
}

// newWindowFormat is what new-window answers: the new window and its pane.
const newWindowFormat = "#{window_id} #{pane_id}"

// parseNewWindow reads new-window's answer (newWindowFormat).
func parseNewWindow(out []string) (tmux.WindowID, tmux.PaneID, error) {
	if len(out) != 1 {
		return 0, 0, fmt.Errorf("tmux new-window answered %d lines, want 1", len(out))
	}
	ws, ps, _ := strings.Cut(out[0], " ")
	w, err := tmux.ParseWindowID(ws)
	if err != nil {
		return 0, 0, fmt.Errorf("tmux new-window: %w", err)
	}
	p, err := tmux.ParsePaneID(ps)
	if err != nil {
		return 0, 0, fmt.Errorf("tmux new-window: %w", err)
	}
	return w, p, nil
}

// glanceFormat is what a look asks tmux of a pane: where its cursor is, its height, its process
// and the name of the command in its foreground.
const glanceFormat = "#{cursor_x} #{cursor_y} #{pane_height} #{pane_pid} #{pane_current_command}"

// paneGlance is tmux's answer to glanceFormat.
type paneGlance struct {
	x, y, height int
	pid          int
	command      string // may be empty, or hold spaces
}

// parseGlance reads the answer to glanceFormat: the cursor and height are whole numbers from 0,
// the process's id one from 1; the command is the rest of the line.
func parseGlance(out []string) (paneGlance, error) {
	bad := func() (paneGlance, error) {
		if len(out) == 0 {
			return paneGlance{}, errors.New("tmux display-message answered nothing")
		}
		return paneGlance{}, fmt.Errorf("tmux display-message answered %s", termsafe.QuoteMax(out[0], 80))
	}
	if len(out) == 0 {
		return bad()
	}
	// A command's name may hold a newline (a host names its processes): the numbers are on
	// the first line.
	f := strings.SplitN(out[0], " ", 5)
	if len(f) < 4 {
		return bad()
	}
	var n [4]int
	for i := range n {
		v, err := strconv.Atoi(f[i])
		if err != nil || v < 0 {
			return bad()
		}
		n[i] = v
	}
	g := paneGlance{x: n[0], y: n[1], height: n[2], pid: n[3]}
	if g.pid < 1 {
		return bad()
	}
	if len(f) == 5 {
		g.command = f[4]
	}
	return g, nil
}

// paneDead asks tmux whether a pane's process has exited, and with what (known is false while
// tmux has not collected it).
func (e *environment) paneDead(ctx context.Context, c *tmux.Client, p tmux.PaneID) (dead bool, code int, known bool, err error) {
	out, err := c.Command(ctx, "display-message", "-p", "-t", p.String(), deadFormat)
	if err != nil {
		return false, 0, false, fmt.Errorf("tmux display-message: %w", err)
	}
	if len(out) != 1 {
		return false, 0, false, fmt.Errorf("tmux display-message answered %d lines, want 1", len(out))
	}
	end, err := parseDead(strings.Split(out[0], " "))
	if !end.dead {
		return false, 0, false, nil
	}
	return true, end.code, end.known, err
}

// mark stores a terminal's number and metadata in its window's options.
func (e *environment) mark(ctx context.Context, c *tmux.Client, w tmux.WindowID, id api.TerminalID, meta windowMeta) error {
	js, _ := json.Marshal(meta)
	cmds := [][]string{
		{"set-option", "-w", "-t", w.String(), metaOption, string(js)},
		{"set-option", "-w", "-t", w.String(), api.WindowTerminalOption, id.String()},
		{"set-option", "-t", e.name, nextOption, strconv.Itoa(id.Terminal + 1)},
	}
	if !meta.Runs {
		// A shell's window closes when its person types exit, as tmux's windows do; only
		// agents' windows stay to show how they ended (remain-on-exit is on for every window
		// from the start, so that no agent can end before it is set).
		cmds = append(cmds, []string{"set-option", "-w", "-t", w.String(), "remain-on-exit", "off"})
	}
	if err := together(ctx, c, cmds); err != nil {
		return fmt.Errorf("tmux set-option: %w", err)
	}
	return nil
}

// together runs commands that do not depend on one another at once: tmux gets them in one write
// and answers them in one round trip, which counts over SSH. It returns the first error.
func together(ctx context.Context, c *tmux.Client, cmds [][]string) error {
	errs := make(chan error, len(cmds))
	for _, args := range cmds {
		go func() {
			_, err := c.Command(ctx, args...)
			errs <- err
		}()
	}
	var first error
	for range cmds {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// capture reads a pane's screen: the visible screen, or its last lines (from history too) when
// lines is set. Trailing blank lines are left out.
func (e *environment) capture(ctx context.Context, pane tmux.PaneID, lines int) (string, error) {
	c, err := e.current()
	if err != nil {
		return "", err
	}
	args := []string{"capture-pane", "-p", "-J", "-t", pane.String()}
	if lines > 0 {
		args = append(args, "-S", "-"+strconv.Itoa(lines))
	}
	out, err := c.Command(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("tmux capture-pane: %w", err)
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if lines > 0 && len(out) > lines {
		out = out[len(out)-lines:]
	}
	return clipScreen(strings.Join(out, "\n")), nil
}

// sendKeys types text into a pane literally, then, after the paste delay, Enter. beforeEnter, if
// set, is called just before the Enter.
func (e *environment) sendKeys(ctx context.Context, pane tmux.PaneID, text string, enter bool, beforeEnter func()) error {
	c, err := e.current()
	if err != nil {
		return err
	}
	if text != "" {
		if _, err := c.Command(ctx, "send-keys", "-t", pane.String(), "-l", "--", text); err != nil {
			return fmt.Errorf("tmux send-keys: %w", err)
		}
	}
	if !enter {
		return nil
	}
	if text != "" {
		select {
		case <-time.After(e.app.cfg.PasteDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if beforeEnter != nil {
		beforeEnter()
	}
	if _, err := c.Command(ctx, "send-keys", "-t", pane.String(), "Enter"); err != nil {
		return fmt.Errorf("tmux send-keys Enter: %w", err)
	}
	return nil
}
