package worktree

import (
	"context"
	"crypto/sha1"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAnyAssumeUnchanged reads indexes that git itself wrote, in each of its formats, and checks
// the answer against git's own (`git ls-files -v`): with no entry marked, then with one.
func TestAnyAssumeUnchanged(t *testing.T) {
	setup(t)
	cases := []struct {
		name   string
		init   []string // git init's options
		config [][2]string
		extra  func(t *testing.T, dir string)
		ok     bool // the reader vouches for the index
	}{
		{name: "v2", config: [][2]string{{"index.version", "2"}}, ok: true},
		{name: "v3 with intent-to-add and skip-worktree", config: [][2]string{{"index.version", "3"}}, ok: true,
			extra: func(t *testing.T, dir string) {
				write(t, dir, "new.txt", "n\n")
				run(t, dir, "add", "-N", "new.txt")
				run(t, dir, "update-index", "--skip-worktree", "b/c.txt")
			}},
		{name: "v4", config: [][2]string{{"index.version", "4"}}, ok: true},
		{name: "sha256", init: []string{"--object-format=sha256"}, ok: true},
		{name: "a long name", ok: true, extra: func(t *testing.T, dir string) {
			// Over 4095 bytes, so that the name's length field says 0xFFF: longer than a file's
			// path may be, so the entry is made in the index alone.
			long := strings.Repeat(strings.Repeat("n", 200)+"/", 25) + "m"
			blob := run(t, dir, "hash-object", "-w", "a.txt")
			run(t, dir, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+long)
		}},
		{name: "split index", config: [][2]string{{"core.splitIndex", "true"}}, ok: false},
		// git 2.40 and later write zeros for the checksum; older ones know not the key.
		{name: "skipHash", config: [][2]string{{"index.skipHash", "true"}}, ok: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			run(t, dir, append([]string{"init", "-q"}, tc.init...)...)
			for _, kv := range tc.config {
				run(t, dir, "config", kv[0], kv[1])
			}
			for _, f := range []string{"a.txt", "b/c.txt", "b/d.txt", "e/f/g.txt"} {
				write(t, dir, f, f+"\n")
			}
			run(t, dir, "add", "-A")
			run(t, dir, "commit", "-q", "-m", "first")
			if tc.extra != nil {
				tc.extra(t, dir)
			}
			index := filepath.Join(dir, ".git", "index")
			for _, mark := range []bool{false, true} {
				if mark {
					run(t, dir, "update-index", "--assume-unchanged", "b/d.txt")
				}
				data, err := os.ReadFile(index)
				if err != nil {
					t.Fatal(err)
				}
				found, ok := anyAssumeUnchanged(data)
				wantOK := tc.ok && strings.Trim(string(data[len(data)-20:]), "\x00") != ""
				want := strings.Contains(run(t, dir, "ls-files", "-v"), "h b/d.txt")
				if want != mark {
					t.Fatalf("git says the mark is %v after marking=%v", want, mark)
				}
				if ok != wantOK || ok && found != want {
					t.Errorf("marked=%v: anyAssumeUnchanged = %v, %v; want %v, %v", mark, found, ok, want, wantOK)
				}
			}
		})
	}
}

// TestChangesAssumeUnchangedIndexV4: the mark is found in an index of version 4 too (paths
// compressed), and the change behind it is seen.
func TestChangesAssumeUnchangedIndexV4(t *testing.T) {
	r, g := newGroup(t, "au4")
	run(t, g.Dir, "update-index", "--index-version", "4")
	run(t, g.Dir, "update-index", "--assume-unchanged", "README")
	write(t, g.Dir, "README", "changed behind git's back\n")
	c, err := r.Changes(context.Background(), "au4", ChangesOptions{Stat: true})
	if err != nil || !slices.Equal(c.Files, []File{{Path: "README", Status: "M", Added: 1, Deleted: 1}}) {
		t.Errorf("Changes = %+v, %v; want README modified", c.Files, err)
	}
}

// FuzzAnyAssumeUnchanged: no bytes make the reader panic or read out of bounds. The input is
// taken as an index's body with its checksum added, so that the fuzzer reaches the entries.
func FuzzAnyAssumeUnchanged(f *testing.F) {
	entry := func(flags uint16, name string) []byte {
		e := make([]byte, 40+20)
		e = binary.BigEndian.AppendUint16(e, flags)
		e = append(e, name...)
		for pad := 8 - (len(e) % 8); pad > 0; pad-- {
			e = append(e, 0)
		}
		return e
	}
	for _, v := range []uint32{2, 3, 4} {
		h := []byte("DIRC")
		h = binary.BigEndian.AppendUint32(h, v)
		h = binary.BigEndian.AppendUint32(h, 2)
		h = append(h, entry(0x8000|5, "a.txt")...)
		h = append(h, entry(0x4000|5, "b.txt\x00\x40\x00")...)
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		anyAssumeUnchanged(body)
		sum := sha1.Sum(body)
		anyAssumeUnchanged(append(body[:len(body):len(body)], sum[:]...))
	})
}
