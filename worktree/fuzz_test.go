package worktree

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// The parsers of git's output: whatever git prints, they return an error or records, never
// panic.

func FuzzParseRawNumstat(f *testing.F) {
	for _, s := range []string{
		":100644 100644 bdc955b 25cb955 M\x00bin\x00:100644 100644 422c2b7 de98044 R066\x00f\x00g\x00-\t-\tbin\x001\t0\t\x00f\x00g\x00",
		":100644 100644 a b M\x00x\x001\t2\tx\x00",
		"", ":", ":1 2 3 4 R\x00", "1\t2\t\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		files, err := parseRawNumstat(out)
		if err != nil && files != nil {
			t.Fatalf("parseRawNumstat: an error and %d files", len(files))
		}
	})
}

func FuzzParseWorktreeList(f *testing.F) {
	for _, s := range []string{
		"worktree /a\x00HEAD 0123\x00branch refs/heads/main\x00\x00worktree /b\x00HEAD 4567\x00detached\x00locked why\x00prunable gone\x00\x00",
		"", "\x00", "HEAD x\x00", "worktree\x00bare\x00\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		wts, err := parseWorktreeList(out)
		if err != nil && wts != nil {
			t.Fatalf("parseWorktreeList: an error and %d worktrees", len(wts))
		}
	})
}

func FuzzParseCheckAttr(f *testing.F) {
	for _, s := range []string{
		"go.sum\x00linguist-generated\x00unspecified\x00a/x.pb.go\x00linguist-generated\x00set\x00",
		"two\nlines\x00linguist-generated\x00true\x00", "", "\x00", "a\x00b\x00", "a\x00b\x00c",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		attrs, err := parseCheckAttr(out)
		if err != nil {
			if attrs != nil {
				t.Fatalf("parseCheckAttr: an error and %d answers", len(attrs))
			}
			return
		}
		// What reads writes the same bytes back.
		var b strings.Builder
		for _, a := range attrs {
			b.WriteString(a.path + "\x00" + a.attr + "\x00" + a.value + "\x00")
		}
		if b.String() != string(out) {
			t.Fatalf("parseCheckAttr(%q) = %q, which reads back as %q", out, attrs, b.String())
		}
	})
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"133\x0013\x00-\x0026833\x00", "", "\x00", "x\x00", "1", "-1\x00", "18446744073709551616\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		sizes, err := parseSizes(out)
		if err != nil && sizes != nil {
			t.Fatalf("parseSizes: an error and %d sizes", len(sizes))
		}
		if err == nil && len(sizes) > bytes.Count(out, []byte{0}) {
			t.Fatalf("parseSizes(%q): %d sizes from %d entries", out, len(sizes), bytes.Count(out, []byte{0}))
		}
	})
}

// The JSON of File and Changes carries paths and patches as bytes: for any of them, Marshal then
// Unmarshal gives the same bytes, the JSON is valid (and UTF-8), and marshalling what came back
// gives the same JSON.

func FuzzFileJSON(f *testing.F) {
	for _, s := range []string{"README", "caf\xe9", "two\nlines", "", "\xff\xfe", "a\u2028b", `"<>&\`, "\x01"} {
		f.Add(s, "old/"+s, 3)
	}
	f.Fuzz(func(t *testing.T, path, old string, added int) {
		in := File{Path: path, OldPath: old, Status: "R", Added: added, Deleted: 1, LeftOut: LeftOutGenerated}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", in, err)
		}
		if !json.Valid(data) || !utf8.Valid(data) {
			t.Fatalf("Marshal(%+v) = %q: not valid JSON in UTF-8", in, data)
		}
		var out File
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("Unmarshal(%q): %v", data, err)
		}
		if out != in {
			t.Fatalf("File %+v came back as %+v from %q", in, out, data)
		}
		if again, _ := json.Marshal(out); !bytes.Equal(again, data) {
			t.Fatalf("File's JSON %q came back as %q", data, again)
		}
	})
}

func FuzzChangesJSON(f *testing.F) {
	for _, s := range []string{"README", "caf\xe9", "two\nlines", "", "\xff\xfe", "a\u2028b", `"<>&\`, "\x00\x01"} {
		f.Add(s, "diff --git a/"+s+" b/"+s+"\n+\tx\n", "subject "+s)
	}
	f.Fuzz(func(t *testing.T, path, patch, subject string) {
		subject = strings.ToValidUTF8(subject, "\uFFFD") // as commits makes it
		in := Changes{Group: "g", Base: "b", Head: "h", Commits: []Commit{{Hash: "h", Subject: subject}},
			Files: []File{{Path: path, Status: "A", Added: 1}}, Patch: patch}
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if !json.Valid(data) || !utf8.Valid(data) {
			t.Fatalf("Marshal = %q: not valid JSON in UTF-8", data)
		}
		var out Changes
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("Unmarshal(%q): %v", data, err)
		}
		if out.Patch != in.Patch || len(out.Files) != 1 || out.Files[0] != in.Files[0] {
			t.Fatalf("patch %q, path %q came back as %q, %+v from %q", in.Patch, path, out.Patch, out.Files, data)
		}
		if len(out.Commits) != 1 || out.Commits[0] != in.Commits[0] {
			t.Fatalf("commits %+v came back as %+v", in.Commits, out.Commits)
		}
		if again, _ := json.Marshal(out); !bytes.Equal(again, data) {
			t.Fatalf("Changes's JSON %q came back as %q", data, again)
		}
	})
}

// FuzzChangesUnmarshal: whatever JSON a host sends, reading it never panics, and what reads
// writes JSON that reads back to the same JSON.
func FuzzChangesUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"group":"g","base":"b","files":[{"path":"caf\ufffd","path_base64":"Y2Fm6Q==","status":"A","added":1,"deleted":0}],"patch_base64":"eA=="}`,
		`{"files":null}`, `{"patch":"x","patch_base64":"!"}`, `{"files":[{"old_path_base64":"%%"}]}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Changes
		if json.Unmarshal(data, &c) != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal of what %q read: %v", data, err)
		}
		var again Changes
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("Unmarshal(%q), written from %q: %v", out, data, err)
		}
		if twice, _ := json.Marshal(again); !bytes.Equal(twice, out) {
			t.Fatalf("%q read and written is %q, then %q", data, out, twice)
		}
	})
}

// FuzzRemoteKey: whatever a repository's config holds as a remote's URL, remoteKey never panics,
// and what it makes of a URL with a host carries no user.
func FuzzRemoteKey(f *testing.F) {
	for _, s := range []string{"git@github.com:me/app.git", "ssh://u@[::1]:22/x", "https://a:b@h/p/", "/srv/x", "file:///x", ":", "@:", "://", "[", "a://[b", ":///@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, url string) {
		key := remoteKey(url)
		// A URL whose authority (between :// and the next /) is empty names no host: its key is
		// a path, in which an @ is the path's own.
		if i := strings.Index(url, "://"); i >= 0 && !strings.HasPrefix(url, "file://") && !strings.HasPrefix(url[i+3:], "/") {
			host, _, _ := strings.Cut(key, "/")
			if strings.Contains(host, "@") {
				t.Fatalf("remoteKey(%q) = %q: a user is left in the host", url, key)
			}
		}
	})
}

// FuzzLocalPath: a path that git lists is copied only when it stays inside the checkout.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{".env", "a/b", "../x", "/etc/passwd", "a/../../b", "a//b", "./a", "", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if localPath(p) != "" {
			return
		}
		if j := filepath.Join("/top", p); !strings.HasPrefix(j, "/top/") {
			t.Fatalf("localPath(%q) takes it, and it leads to %q", p, j)
		}
	})
}

// FuzzIncludeReach: any include list is read without a panic; a line more never makes a folder
// unreached; a list that names a folder's first part reaches it.
func FuzzIncludeReach(f *testing.F) {
	for _, s := range [][2]string{{".env\n*.local\n", "node_modules/"}, {"data/fixtures/*.txt\n", "data/fixtures/"},
		{"[!a]*\n\\#x\n!y\n", "b/c/"}, {"**/x/\n/a/b\r\n", "a/"}} {
		f.Add(s[0], s[1], "extra")
	}
	f.Fuzz(func(t *testing.T, list, dir, extra string) {
		dir = strings.Trim(dir, "/") + "/"
		got := parseReach([]byte(list)).reaches(dir)
		if got && !parseReach([]byte(list+"\n"+extra)).reaches(dir) {
			t.Errorf("%q reaches %q, and no longer with %q after it", list, dir, extra)
		}
		first, _, _ := strings.Cut(dir, "/")
		if first != "" && !strings.ContainsAny(first, "*?[\\#! \r\n") && !parseReach([]byte(first+"\n")).reaches(dir) {
			t.Errorf("%q does not reach %q", first, dir)
		}
	})
}
