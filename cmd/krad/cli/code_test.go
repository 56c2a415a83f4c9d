package cli

import (
	"strings"
	"testing"
)

func TestParseCodeTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		path string
		line int
		bad  bool
	}{
		{in: "retry.go", path: "retry.go"},
		{in: "retry.go:42", path: "retry.go", line: 42},
		{in: "/a/b:c.go", path: "/a/b:c.go"},
		{in: "a:b:7", path: "a:b", line: 7},
		{in: "retry.go:", path: "retry.go:"},
		{in: "retry.go:0", bad: true},
		{in: ":12", bad: true},
		{in: "x:99999999999999999999999", bad: true},
		{in: "", bad: true},
		{in: "a\x00b", bad: true},
	} {
		path, line, err := parseCodeTarget(c.in)
		if (err != nil) != c.bad || path != c.path || line != c.line {
			t.Errorf("parseCodeTarget(%q) = %q, %d, %v; want %q, %d, bad %v", c.in, path, line, err, c.path, c.line, c.bad)
		}
	}
}

// FuzzParseCodeTarget: any argument gives a path that, with its line put back, is the argument,
// or an error; never a line below 1 nor an empty path.
func FuzzParseCodeTarget(f *testing.F) {
	for _, s := range []string{"retry.go:42", "a:b", ":1", "x:", "a:0", "/tmp/x:9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		path, line, err := parseCodeTarget(s)
		if err != nil {
			if strings.Contains(err.Error(), s) && len(s) > 3 {
				t.Errorf("the error repeats the input: %v", err)
			}
			return
		}
		if path == "" || line < 0 || strings.IndexByte(path, 0) >= 0 {
			t.Fatalf("parseCodeTarget(%q) = %q, %d", s, path, line)
		}
		back := path
		if line > 0 {
			if !strings.HasPrefix(s, path+":") {
				t.Fatalf("parseCodeTarget(%q) = %q, %d: not a prefix", s, path, line)
			}
			return
		}
		if back != s {
			t.Fatalf("parseCodeTarget(%q) = %q without a line", s, path)
		}
	})
}
