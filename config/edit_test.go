package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestEditDiscovery(t *testing.T) {
	for _, c := range []struct {
		name, in string
		on       bool
		want     string
	}{
		{"the key's line changes, its comment stays",
			"# my settings\n\ndiscovery = true   # others find the bus\nquiet = \"3s\"\n", false,
			"# my settings\n\ndiscovery = false   # others find the bus\nquiet = \"3s\"\n"},
		{"and back", "discovery=false\n", true, "discovery=true\n"},
		{"a quoted key", "\"discovery\" = true\n", false, "\"discovery\" = false\n"},
		{"CRLF kept", "discovery = true\r\nquiet = \"3s\"\r\n", false, "discovery = false\r\nquiet = \"3s\"\r\n"},
		{"no key: added after the header block",
			"# header\n# more\n\n# the lead\n[[terminal]]\nlead = true\n", false,
			"# header\n# more\n\ndiscovery = false\n# the lead\n[[terminal]]\nlead = true\n"},
		{"no key and no header: added first", "[[terminal]]\nlead = true\n", false,
			"discovery = false\n[[terminal]]\nlead = true\n"},
		{"an empty file", "", false, "discovery = false\n"},
		{"only a comment", "# hi\n", false, "# hi\ndiscovery = false\n"},
		{"a look-alike in a multi-line string is left alone",
			"discovery = true\n[[terminal]]\ncommand = \"\"\"\ndiscovery = true\n\"\"\"\n", false,
			"discovery = false\n[[terminal]]\ncommand = \"\"\"\ndiscovery = true\n\"\"\"\n"},
		{"no key, a look-alike in a string",
			"[[terminal]]\ncommand = \"\"\"\ndiscovery = true\n\"\"\"\n", false,
			"discovery = false\n[[terminal]]\ncommand = \"\"\"\ndiscovery = true\n\"\"\"\n"},
		{"unchanged", "discovery = false # off\n", false, "discovery = false # off\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := EditDiscovery([]byte(c.in), c.on)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got\n%q\nwant\n%q", got, c.want)
			}
		})
	}
}

// TestEditNotify: notify is a switch as discovery is, each edited on its own line, the other
// left alone.
func TestEditNotify(t *testing.T) {
	in := "discovery = true # find me\nnotify = true  # tell me\n"
	got, err := EditNotify([]byte(in), false)
	if want := "discovery = true # find me\nnotify = false  # tell me\n"; err != nil || string(got) != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	got, err = EditNotify([]byte("# mine\n\nquiet = \"3s\"\n"), false)
	if want := "# mine\n\nnotify = false\nquiet = \"3s\"\n"; err != nil || string(got) != want {
		t.Errorf("no key: got %q, %v; want %q", got, err, want)
	}
	if c, err := Parse(got); err != nil || c.Notify || !c.Discovery {
		t.Errorf("it reads as %+v, %v", c, err)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := SetNotify(path, false); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.Notify {
		t.Errorf("after SetNotify(false): %+v, %v", c, err)
	}
}

func TestEditDiscoveryRefuses(t *testing.T) {
	for _, in := range []string{
		"discovery = \n",              // does not parse
		"discovery = true\nquiet = 1", // does not parse as the app's (quiet)
	} {
		var ce *Error
		if _, err := EditDiscovery([]byte(in), false); !errors.As(err, &ce) {
			t.Errorf("%q: got %v, want an *Error", in, err)
		}
	}
}

func TestSetDiscovery(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	const before = "# krad-ade\n\ndiscovery = true # find me\n[[terminal]]\ntitle = \"x\"\n"
	write(t, path, before)
	if err := SetDiscovery(path, false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if want := strings.Replace(before, "true #", "false #", 1); string(b) != want {
		t.Errorf("got %q, want %q", b, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	c, err := Load(path)
	if err != nil || c.Discovery {
		t.Errorf("Load after: %+v %v, want discovery off", c, err)
	}

	// A file being edited (it does not parse) is left as it is, and the error gives its line.
	write(t, path, "discovery = true\nquiet = \n")
	err = SetDiscovery(path, false)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 {
		t.Errorf("broken file: got %v, want an *Error on line 2", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "discovery = true\nquiet = \n" {
		t.Errorf("the broken file changed: %q", b)
	}

	// A missing file is made, owner-only.
	os.Remove(path)
	if err := SetDiscovery(path, false); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "discovery = false\n" {
		t.Errorf("new file: %q", b)
	}
}

// FuzzEditDiscovery: any config the app reads, edited, still parses, to the same config but for
// discovery, and differs from the input in one line (changed or added).
func FuzzEditDiscovery(f *testing.F) {
	for _, seed := range []string{
		"", "discovery = true\n", "# c\n\ndiscovery = false # x\r\n", "[[terminal]]\nlead = true\n",
		"x = \"\"\"\ndiscovery = true\n\"\"\"\n", "discovery = true # a\n\"quiet\" = \"3s\"\n",
		"a.discovery = true\n", "discovery = true;\n",
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, on bool) {
		before, err := Parse(data)
		if err != nil {
			return
		}
		out, err := EditDiscovery(data, on)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got error %v (%T), want an *Error", err, err)
			}
			return
		}
		after, err := Parse(out)
		if err != nil {
			t.Fatalf("the edit does not parse: %v\n%q", err, out)
		}
		before.Discovery = on
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("the edit changed more than discovery:\n%+v\n%+v", after, before)
		}
		in, got := strings.Split(string(data), "\n"), strings.Split(string(out), "\n")
		diff := 0
		switch len(got) - len(in) {
		case 0:
			for i := range in {
				if in[i] != got[i] {
					diff++
				}
			}
		case 1:
			diff = 1 // one line added: the rest is checked by the parse
		default:
			diff = 2
		}
		if diff > 1 {
			t.Fatalf("more than one line changed:\n%q\n%q", data, out)
		}
	})
}
