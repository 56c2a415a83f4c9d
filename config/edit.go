package config

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/krad-ade/krad/internal/atomicfile"
)

// SetDiscovery turns "Let other programs find the agents API" on or off in the config file at
// path, as the app's settings do: one line changes (or, if the file has no discovery key, one is
// added), so that its comments, its other keys and their order are kept. The file is written
// atomically, owner-only; a running app's Watch then applies it. A file that is missing is made.
//
// Nothing is written when the file cannot be read, does not parse (the person is editing it: its
// line is in the error), or when the edit would change anything but discovery; the error says why.
func SetDiscovery(path string, on bool) error { return setSwitch(path, discovery, on) }

// SetNotify turns the desktop notifications (notify) on or off in the config file at path, as
// SetDiscovery turns discovery.
func SetNotify(path string, on bool) error { return setSwitch(path, notify, on) }

// EditDiscovery is the text of a config.toml with discovery set to on: data with the discovery
// key's line changed, or one line added at the top (after the file's opening comment block) when
// it has none. The result parses to what data does but for Discovery; data that does not parse,
// or whose discovery key cannot be changed on its own line, is refused with an [*Error].
func EditDiscovery(data []byte, on bool) ([]byte, error) { return editSwitch(data, discovery, on) }

// EditNotify is EditDiscovery for notify.
func EditNotify(data []byte, on bool) ([]byte, error) { return editSwitch(data, notify, on) }

// aSwitch is a top-level key of config.toml that is true or false, which the app's settings
// turn on and off: its name, the line that sets it (the key, bare or quoted, the value, and what
// follows: spaces, a comment, a carriage return), and its field.
type aSwitch struct {
	key   string
	line  *regexp.Regexp
	field func(*Config) *bool
}

func newSwitch(key string, field func(*Config) *bool) aSwitch {
	q := regexp.QuoteMeta(key)
	return aSwitch{key: key, field: field,
		line: regexp.MustCompile(`^(\s*(?:` + q + `|"` + q + `"|'` + q + `')\s*=\s*)(true|false)(\s*(?:#.*)?)$`)}
}

var (
	discovery = newSwitch("discovery", func(c *Config) *bool { return &c.Discovery })
	notify    = newSwitch("notify", func(c *Config) *bool { return &c.Notify })
)

// setSwitch sets sw to on in the config file at path (SetDiscovery).
func setSwitch(path string, sw aSwitch, on bool) error {
	data, err := readFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s not changed: %w", sw.key, err)
	}
	out, err := editSwitch(data, sw, on)
	if err != nil {
		return fmt.Errorf("%s not changed: %w", sw.key, err)
	}
	if string(out) == string(data) && data != nil {
		return nil
	}
	if err := atomicfile.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("%s not changed: %w", sw.key, err)
	}
	return nil
}

// editSwitch is data with sw set to on (EditDiscovery).
func editSwitch(data []byte, sw aSwitch, on bool) ([]byte, error) {
	before, err := Parse(data)
	if err != nil {
		return nil, err
	}
	var top map[string]toml.Primitive
	md, err := toml.Decode(string(data), &top)
	if err != nil {
		return nil, fromTOML(data, err)
	}
	value := "false"
	if on {
		value = "true"
	}
	lines := strings.Split(string(data), "\n")
	if _, ok := top[sw.key]; ok {
		d := &document{md: &md, top: top}
		n := d.ownLine(toml.Key{sw.key})
		if n < 1 || n > len(lines) {
			return nil, &Error{Msg: sw.key + "'s line cannot be found: set it by hand"}
		}
		m := sw.line.FindStringSubmatch(lines[n-1])
		if m == nil {
			return nil, &Error{Line: n, Msg: sw.key + " is not alone on its line (" + sw.key + " = true): set it by hand"}
		}
		lines[n-1] = m[1] + value + m[3]
	} else {
		at := headerEnd(lines)
		if at >= len(lines)-1 && lines[len(lines)-1] == "" {
			at = len(lines) - 1 // before the final newline's empty rest
		}
		eol := ""
		if strings.Contains(string(data), "\r\n") {
			eol = "\r"
		}
		add := []string{sw.key + " = " + value + eol}
		if len(data) == 0 {
			lines = nil
			add = append(add, "")
		}
		lines = append(lines[:at], append(add, lines[at:]...)...)
	}
	out := []byte(strings.Join(lines, "\n"))
	after, err := Parse(out)
	want := before
	*sw.field(&want) = on
	if err != nil || !reflect.DeepEqual(after, want) {
		return nil, &Error{Msg: sw.key + " cannot be changed on its own in this file: set it by hand"}
	}
	return out, nil
}

// headerEnd is where a line added at the top goes: after the file's opening block of comments
// when a blank line ends it (a header about the whole file), else first.
func headerEnd(lines []string) int {
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "#"):
			continue
		case t == "" && i > 0:
			return i + 1
		default:
			return 0
		}
	}
	return 0
}
