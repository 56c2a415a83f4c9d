package bridge

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
)

// FuzzReadResult: readResult, which reads what the host printed, never panics; it finds a
// Result printed after any noise without a '{'; and its error is bounded and escaped.
func FuzzReadResult(f *testing.F) {
	for _, s := range []string{
		`{"group":{"name":"g","dir":"/h/.krad-ade/worktrees/r-0/g","branch":"krad/g","base_commit":"ab","made_branch":true,"locked":true,"created":"2026-01-01T00:00:00Z"}}` + "\n",
		"Welcome {friend} " + `{"error":{"code":"unavailable","message":"git is missing"}}` + "\n",
		"motd\n\x1b[31m{\n" + `{"changes":{"group":"","base":"b","files":[{"path":"x","path_base64":"Y2Fm6Q==","status":"A","added":1,"deleted":0}],"patch_base64":"/w=="}}`,
		`{"list":{"top":"/r","groups":[],"kept":[]}}` + "\nbye\n",
		"", "\n", "{", "{{{{{{{{{{", `{"changes":{"patch_base64":"!"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		res, err := readResult(out)
		if err != nil {
			if msg := err.Error(); len(msg) > 600 || strings.ContainsAny(msg, "\x1b\x00\n") {
				t.Fatalf("the error %q is too long or holds a control character", msg)
			}
			return
		}
		// What was read writes back as a Result that reads the same, behind noise.
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatalf("marshal %+v: %v", res, err)
		}
		again, err := readResult(append([]byte("noise without a brace "), append(b, '\n')...))
		if err != nil {
			t.Fatalf("round trip of %s: %v", b, err)
		}
		if b2, _ := json.Marshal(again); !bytes.Equal(b2, b) {
			t.Fatalf("round trip: %s, want %s", b2, b)
		}
	})
}

// TestReadResult: the Result is the last line, after the shell's noise; an answer that is not
// one says so, quoting what came.
func TestReadResult(t *testing.T) {
	t.Parallel()
	res, err := readResult([]byte("Welcome\nto {the} host: " + `{"error":{"code":"conflict","message":"group g exists"}}` + "\n"))
	if err != nil || res.Error == nil || *res.Error != *api.Errorf(api.CodeConflict, "group g exists") {
		t.Errorf("got %+v, %v; want the conflict", res, err)
	}
	for _, out := range []string{"", "\n", "Segmentation fault\n", `{"group":`} {
		_, err := readResult([]byte(out))
		if err == nil || !strings.HasPrefix(err.Error(), "krad-ade-agents worktree on the host printed no result") {
			t.Errorf("%q: got %v, want no result", out, err)
		}
	}
}
