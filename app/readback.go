package app

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/internal/termsafe"
)

// What the app reads back from an environment's tmux is outside input: on an SSH host, whoever
// controls the host (or its tmux server) writes it, and may write anything a control-mode stream
// carries. The rules below bound and check every value before the app keeps it: a value out of
// range is refused (the window is then taken for one a person opened), never wrapped or stored.
// The app trusts nothing of it for rights: roles and sessions only ever grant rights within the
// environment itself, whose host already controls its terminals.

// The limits on what a host's tmux can make the app keep.
const (
	// DefaultMaxTerminals is how many terminals an environment may have (Config.MaxTerminals).
	// It is far more than a person or a lead uses (a lead directing a hundred workers is a
	// lot), and small enough that the app's model of an environment, its List answer (about
	// 500 bytes a terminal) and the work of adopting its windows stay small whatever a host
	// does: a thousand terminals list in about half a megabyte, well inside the CLI's 16 MiB.
	DefaultMaxTerminals = 1000
	// MaxTerminalNumber is the largest terminal number. Terminal N is tmux's window N, and
	// tmux's window indexes are C ints: a larger number could not be a window's index, and
	// the app's next number (N+1) never overflows.
	MaxTerminalNumber = math.MaxInt32
	// maxGroup is the longest group name read back from a window's options: text like a title.
	maxGroup = api.MaxTitle
	// MaxScreen is the most text Read gives of a screen: its last 2 MiB. A real screen with
	// its history is far less; the bound keeps a Read answer, with JSON's escapes, inside the
	// CLI's 16 MiB answer limit whatever the host's tmux answers.
	MaxScreen = 2 << 20
)

// maxStatus and maxSignal bound a dead pane's exit status and signal: a process's status is a
// byte, and 128 plus a signal is how a shell says it, so a signal is at most 127.
const (
	maxStatus = 255
	maxSignal = 127
)

// errNoTerminalNumber is open's and numbering's answer once the numbers have run out.
var errNoTerminalNumber = fmt.Errorf("no terminal numbers left (the last is %d): restart the environment's tmux server", MaxTerminalNumber)

// check says why m is not what the app writes to a window of environment env, or returns nil.
// The title is not checked here: parseMeta cleans it, as an earlier version of the app
// took titles with control characters.
func (m *windowMeta) check(env string) error {
	if m.Terminal < 1 || m.Terminal > MaxTerminalNumber {
		return fmt.Errorf("terminal %d is not a number from 1 to %d", m.Terminal, MaxTerminalNumber)
	}
	switch m.Role {
	case api.RoleShell, api.RoleLead, api.RoleWorker:
	default:
		return fmt.Errorf("role %s is none of shell, lead and worker", termsafe.QuoteMax(string(m.Role), 40))
	}
	if m.Lead < 0 || m.Lead > MaxTerminalNumber {
		return fmt.Errorf("lead %d is not a terminal number", m.Lead)
	}
	if m.Session != "" {
		// A session is named after its lead: a terminal of this environment.
		id, err := api.ParseTerminalID(m.Session)
		if err != nil || id.Environment != env || id.Terminal > MaxTerminalNumber {
			return fmt.Errorf("session %s is not a terminal of %s", termsafe.QuoteMax(m.Session, 80), env)
		}
	}
	if err := api.CheckText("group", m.Group, maxGroup); err != nil {
		return err
	}
	if m.Ask != "" && !isHex(m.Ask, 64) {
		return errors.New("ask is not the hash of an askpass key")
	}
	if m.Spec != "" && !isSpecKey(m.Spec) {
		return fmt.Errorf("spec %s is not a configured terminal's key", termsafe.QuoteMax(m.Spec, 40))
	}
	return nil
}

// isSpecKey reports whether s is the form of TerminalSpec.key: 16 lower-case hex digits.
func isSpecKey(s string) bool { return isHex(s, 16) }

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseMeta reads a window's @krad option. It returns nil, nil for a window without one, and an
// error for one the app cannot have written.
func parseMeta(s, env string) (*windowMeta, error) {
	if s == "" {
		return nil, nil
	}
	var m windowMeta
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, errors.New("@krad is not the app's JSON")
	}
	if err := m.check(env); err != nil {
		return nil, fmt.Errorf("@krad: %w", err)
	}
	// An earlier version took titles with control characters.
	if api.CheckTitle(m.Title) != nil {
		m.Title = api.CleanTitle(m.Title)
	}
	m.Title = cmp.Or(m.Title, "shell")
	return &m, nil
}

// parseRange reads a number tmux wrote: decimal digits (no sign, no space), from lo to hi, which
// are at least 0. what names it in the error.
func parseRange(what, s string, lo, hi int) (int, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n < uint64(lo) || n > uint64(hi) {
		return 0, fmt.Errorf("%s %s is not a number from %d to %d", what, termsafe.QuoteMax(s, 40), lo, hi)
	}
	return int(n), nil
}

// parseNext reads the session's @krad_next: the number the next terminal gets.
func parseNext(s string) (int, error) { return parseRange("@krad_next", s, 1, MaxTerminalNumber+1) }

// parseIndex reads a window index: from 0 to MaxTerminalNumber, as tmux's are.
func parseIndex(s string) (int, error) { return parseRange("window index", s, 0, MaxTerminalNumber) }

// deadStatus is a dead pane's exit code: its status, or 128 plus the signal that killed it. known
// is false while tmux has not collected the pane's process yet, so knows neither. A status or
// signal out of range is an error, with the code -1 and known set: the pane is dead, and how it
// ended cannot be told.
func deadStatus(status, signal string) (code int, known bool, err error) {
	switch {
	case status != "":
		n, err := parseRange("exit status", status, 0, maxStatus)
		if err != nil {
			return -1, true, err
		}
		return n, true, nil
	case signal != "":
		n, err := parseRange("signal", signal, 1, maxSignal)
		if err != nil {
			return -1, true, err
		}
		return 128 + n, true, nil
	}
	return -1, false, nil
}

// clipScreen keeps the last MaxScreen bytes of a screen's text, from the start of a line.
func clipScreen(s string) string {
	if len(s) <= MaxScreen {
		return s
	}
	s = s[len(s)-MaxScreen:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
