package config

import (
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseSetups: [[setup]] tables in the file's order, for the environments they name; a bad
// key or value is refused with its line.
func TestParseSetups(t *testing.T) {
	data := "[[environment]]\nname = \"build\"\nssh = \"h\"\n" +
		"[[setup]]\nenvironment = \"build\"\nremote = \"github.com/me/app\"\ninclude = [\".env\", \"*.local\"]\n" +
		"[[setup]]\npath = \"~/src/app\"\ninclude = [\".env\"]\ncommand = \"npm ci\"\ntimeout = \"15m\"\n"
	got, err := Parse([]byte(data))
	want := []Setup{
		{Environment: "build", Remote: "github.com/me/app", Include: []string{".env", "*.local"}},
		{Path: "~/src/app", Include: []string{".env"}, Command: "npm ci", Timeout: 15 * time.Minute},
	}
	if err != nil || !reflect.DeepEqual(got.Setups, want) {
		t.Fatalf("setups: got %+v, %v; want %+v", got.Setups, err, want)
	}
	for _, tt := range []struct {
		data string
		line int
		msg  string
	}{
		{"[[setup]]\npath = \"src/app\"\ninclude = [\".env\"]\n", 2, "setup path must be"},
		{"[[setup]]\nremote = \"\"\ninclude = [\".env\"]\n", 2, "setup remote must be"},
		{"[[setup]]\ninclude = \".env\"\n", 2, "setup include must be a list"},
		{"[[setup]]\ninclude = [\"a\\nb\"]\n", 2, "setup include must be a list"},
		{"[[setup]]\ninclude = [\" \"]\n", 2, "setup include must be a list"},
		{"[[setup]]\npath = \"/a\"\n", 2, "a [[setup]] needs include or command"},
		{"[[setup]]\ncommand = \"\"\n", 2, "setup command must be a shell command line"},
		{"[[setup]]\ncommand = [\"npm\", \"ci\"]\n", 2, "setup command must be a shell command line"},
		{"[[setup]]\ncommand = \"x\"\ntimeout = \"3h\"\n", 3, "setup timeout must be a duration from 1s to 2h0m0s"},
		{"[[setup]]\ncommand = \"x\"\ntimeout = 10\n", 3, "setup timeout must be a duration"},
		{"[[setup]]\nenvironment = \"buid\"\ninclude = [\".env\"]\n", 2, `setup environment "buid" is not named by an [[environment]]`},
		{"[[setup]]\ninclude = [\".env\"]\nscript = \"x\"\n", 3, `unknown key "script" in [[setup]]`},
	} {
		_, err := Parse([]byte(tt.data))
		var ce *Error
		if !errors.As(err, &ce) || ce.Line != tt.line || !strings.Contains(ce.Msg, tt.msg) {
			t.Errorf("Parse(%q) = %v, want line %d and %q", tt.data, err, tt.line, tt.msg)
		}
	}
}

// TestSetupDocs: the [[setup]] tables the documentation gives to copy (README.md, docs/groups.md,
// docs/configuration.md) parse as they are, and with their commented keys given too, into the
// values they show. Only the [[setup]] tables' commented keys are given: another table's may be
// an alternative to a key it has (a [[terminal]]'s agent, in place of its command).
func TestSetupDocs(t *testing.T) {
	fence := regexp.MustCompile("(?s)```toml\n(.*?)```")
	commented := regexp.MustCompile(`(?m)^# ([a-z]+ = )`)
	for _, page := range []string{"../README.md", "../docs/groups.md", "../docs/configuration.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, m := range fence.FindAllStringSubmatch(string(b), -1) {
			block := m[1]
			if !strings.Contains(block, "[[setup]]") {
				continue
			}
			found++
			uncommented := uncommentSetup(block, commented)
			if !strings.Contains(uncommented, `name = "build"`) {
				uncommented += "\n[[environment]]\nname = \"build\"\nssh = \"h\"\n"
			}
			for _, data := range []string{block, uncommented} {
				c, err := Parse([]byte(data))
				if err != nil {
					t.Errorf("%s: its [[setup]] block does not parse: %v\n%s", page, err, data)
					continue
				}
				if len(c.Setups) != 1 {
					t.Errorf("%s: %d setups, want 1", page, len(c.Setups))
					continue
				}
				s := c.Setups[0]
				if s.Path != "~/src/app" || !slices.Contains(s.Include, ".env") || !strings.HasPrefix(s.Command, "npm ci") || s.Timeout != 10*time.Minute {
					t.Errorf("%s: its [[setup]] block reads as %+v", page, s)
				}
			}
		}
		if found != 1 {
			t.Errorf("%s holds %d [[setup]] blocks to copy, want 1", page, found)
		}
	}
}

// uncommentSetup gives the commented keys (lines commented matches) of block's [[setup]] tables,
// up to the next table's header, and leaves the rest of block as it is.
func uncommentSetup(block string, commented *regexp.Regexp) string {
	lines := strings.Split(block, "\n")
	in := false
	for i, line := range lines {
		if strings.HasPrefix(line, "[") {
			in = strings.TrimSpace(line) == "[[setup]]"
		}
		if in {
			lines[i] = commented.ReplaceAllString(line, "$1")
		}
	}
	return strings.Join(lines, "\n")
}
