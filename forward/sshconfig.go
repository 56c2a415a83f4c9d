package forward

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/kevinburke/ssh_config"

	"github.com/krad-ade/krad/internal/termsafe"
)

// Warning is a line of an ssh_config file that the package could not read and left out; the
// rest of the file still counts. Callers log it.
type Warning struct {
	File   string
	Line   int // 1-based; 0 when the whole file was left out
	Reason string
}

func (w Warning) String() string {
	if w.Line == 0 {
		return fmt.Sprintf("%s: skipped: %s", w.File, w.Reason)
	}
	return fmt.Sprintf("%s:%d: skipped: %s", w.File, w.Line, w.Reason)
}

// errPosition matches the position ssh_config puts before its parse errors: "(12, 3): …".
var errPosition = regexp.MustCompile(`^\((\d+), (\d+)\): ?`)

// neverMatches stands in for a Host or Match line the library cannot read, so that the lines
// under it apply to no host rather than to the block above it.
const neverMatches = "Host !*"

// loadSSHConfig reads and parses an ssh_config file. A missing file is no file (nil, no
// error). A line the library cannot parse (Match exec, Match user, a bad pattern) is left out
// with a warning naming it, and the file is parsed again without it: a Host or Match line is
// replaced by one that matches nothing, so that its block is left out too; any other line is
// blanked. A file that still cannot be parsed is left out whole, with a warning.
func loadSSHConfig(path string) (*ssh_config.Config, []Warning, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read ssh config: %w", err)
	}
	cfg, warnings := parseSSHConfig(path, data)
	return cfg, warnings, nil
}

// parseSSHConfig is loadSSHConfig on the contents of a file, named path in warnings.
func parseSSHConfig(path string, data []byte) (*ssh_config.Config, []Warning) {
	lines := bytes.Split(data, []byte("\n"))
	var warnings []Warning
	replaced := map[int]bool{}
	for {
		cfg, err := decodeSSHConfig(bytes.Join(lines, []byte("\n")))
		if err == nil {
			return cfg, warnings
		}
		msg := err.Error()
		m := errPosition.FindStringSubmatch(msg)
		line := 0
		if m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = msg[len(m[0]):]
		}
		msg = termsafe.Quote(strings.TrimSpace(msg))
		if line < 1 || line > len(lines) || replaced[line] {
			return nil, append(warnings, Warning{File: path, Reason: "cannot parse the file: " + msg})
		}
		replaced[line] = true
		key, _, _ := strings.Cut(strings.TrimSpace(string(lines[line-1])), " ")
		key, _, _ = strings.Cut(key, "=")
		key, _, _ = strings.Cut(key, "\t")
		switch strings.ToLower(key) {
		case "host", "match":
			lines[line-1] = []byte(neverMatches)
			msg += "; the lines under it apply to no host"
		default:
			lines[line-1] = nil
		}
		warnings = append(warnings, Warning{File: path, Line: line, Reason: msg})
	}
}

// decodeSSHConfig is ssh_config.DecodeBytes, with a panic (which the library lets out on some
// inputs) turned into an error.
func decodeSSHConfig(data []byte) (cfg *ssh_config.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			cfg, err = nil, fmt.Errorf("ssh_config parser failed: %v", r)
		}
	}()
	return ssh_config.DecodeBytes(data)
}

// sshConfigs is the files ssh reads, in the order it reads them: the first value found wins.
type sshConfigs []*ssh_config.Config

// get returns the first value of key for the host alias, or "".
func (cs sshConfigs) get(alias, key string) string {
	for _, c := range cs {
		if c == nil {
			continue
		}
		if v, err := c.Get(alias, key); err == nil && v != "" {
			return v
		}
	}
	return ""
}

// getAll returns every value of key for the host alias, from every file.
func (cs sshConfigs) getAll(alias, key string) []string {
	var out []string
	for _, c := range cs {
		if c == nil {
			continue
		}
		if vs, err := c.GetAll(alias, key); err == nil {
			out = append(out, vs...)
		}
	}
	return out
}
