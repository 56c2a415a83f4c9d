package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/krad-ade/krad/api"
	"github.com/krad-ade/krad/kradtest/testbin"
	"github.com/krad-ade/krad/worktree"
)

// runWorktree runs `krad-ade-agents worktree` in-process with stdin.
func runWorktree(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Run(context.Background(), append([]string{agentsProg, "worktree"}, args...), MapEnv(nil), strings.NewReader(stdin), &out, &errOut, Options{})
	return out.String(), errOut.String(), code
}

// gitRepo makes a repository with one commit in a new folder, and returns the folder.
func gitRepo(t *testing.T) string {
	t.Helper()
	testbin.Need(t, "git", "git")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// result reads the one line of JSON the verb printed.
func result(t *testing.T, stdout string) worktree.Result {
	t.Helper()
	if strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout is %q, want one line", stdout)
	}
	var res worktree.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	return res
}

// TestWorktreeVerb: the verb runs the Op it reads and prints the Result as one line, exit 0, its
// errors included; stdin that is not an Op is exit 5 with a message, and nothing on stdout.
func TestWorktreeVerb(t *testing.T) {
	repo := gitRepo(t)
	root := t.TempDir()
	op := func(o worktree.Op) string {
		o.Dir, o.Root = repo, root
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	out, errOut, code := runWorktree(t, op(worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "fix-1"}}))
	res := result(t, out)
	if code != 0 || errOut != "" || res.Error != nil || res.Group == nil || res.Group.Name != "fix-1" ||
		!strings.HasPrefix(res.Group.Dir, root+string(filepath.Separator)) {
		t.Fatalf("create: got %d, %q, %+v, stderr %q; want group fix-1 under %s", code, out, res, errOut, root)
	}

	out, _, code = runWorktree(t, op(worktree.Op{Op: worktree.OpGroups}))
	if res = result(t, out); code != 0 || res.List == nil || len(res.List.Groups) != 1 || res.List.Groups[0].Name != "fix-1" {
		t.Fatalf("groups: got %d, %q; want fix-1 listed", code, out)
	}

	// An operation that fails is a Result, exit 0.
	out, _, code = runWorktree(t, op(worktree.Op{Op: worktree.OpCreate, Create: &worktree.CreateOptions{Name: "fix-1"}}))
	if res = result(t, out); code != 0 || res.Error == nil || res.Error.Code != api.CodeConflict {
		t.Errorf("create again: got %d, %q; want a conflict in the result", code, out)
	}
	out, _, code = runWorktree(t, `{"op":"undo","dir":"/"}`)
	if res = result(t, out); code != 0 || res.Error == nil || res.Error.Code != api.CodeBadRequest {
		t.Errorf("unknown op: got %d, %q; want bad_request in the result", code, out)
	}

	for _, tt := range []struct{ name, stdin, want string }{
		{"empty", "", "stdin is empty"},
		{"spaces", " \n\t", "stdin is empty"},
		{"an array", `[{"op":"groups"}]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"a field of no Op", `{"op":"groups","dir":"/","rm":"-rf"}`, `unknown key rm`},
		{"a key in another case", `{"Op":"retire","dir":"/","group":"g"}`, `unknown key Op: keys are case-sensitive, the field is op`},
		{"a key in another case beside it", `{"op":"groups","Op":"retire","dir":"/"}`, `unknown key Op: keys are case-sensitive`},
		{"a nested key in another case", `{"op":"create","dir":"/","create":{"name":"x"}}`, `unknown key create.name: keys are case-sensitive, the field is create.Name`},
		{"a key twice", `{"op":"groups","dir":"/","op":"retire"}`, `key op comes twice`},
		{"a key twice, escaped", `{"op":"groups","dir":"/","\u006fp":"retire"}`, `key op comes twice`},
		{"a long unknown key", `{"op":"groups","` + strings.Repeat("k", 100000) + `":1}`, `unknown key kkkk`},
		{"trailing data", `{"op":"groups"} x`, "more follows"},
		{"two objects", `{"op":"groups"} {"op":"groups"}`, "more follows"},
		{"cut short", `{"op":"groups"`, "not valid"},
		{"not UTF-8", "{\"op\":\"groups\",\"dir\":\"/tmp/caf\xe9\"}", "not UTF-8"},
		{"a wrong type", `{"op":1}`, "not valid"},
		{"too long", `{"op":"groups","hint":"` + strings.Repeat("x", MaxOp) + `"}`, "longer than 131072 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runWorktree(t, tt.stdin)
			if len(errOut) > 1024 {
				t.Errorf("stderr is %d bytes: %.200q…", len(errOut), errOut)
			}
			if code != ExitUsage || out != "" || !strings.Contains(errOut, tt.want) ||
				!strings.HasPrefix(errOut, "krad-ade-agents: error: read the group operation on stdin: ") {
				t.Errorf("got %d, stdout %q, stderr %q; want exit 5, nothing on stdout, %q on stderr", code, out, errOut, tt.want)
			}
		})
	}

	// A pick is checked as the bus checks PickVariant: its how, and that the group is a variant.
	out, _, code = runWorktree(t, op(worktree.Op{Op: worktree.OpPick, Pick: &worktree.PickOptions{Group: "fix-1", How: "rebase"}}))
	if res = result(t, out); code != 0 || res.Error == nil || res.Error.Code != api.CodeBadRequest || !strings.Contains(res.Error.Message, "how must be squash, apply, merge or branch") {
		t.Errorf("pick with how rebase: got %d, %q; want bad_request naming the ways", code, out)
	}
	out, _, code = runWorktree(t, op(worktree.Op{Op: worktree.OpPick, Pick: &worktree.PickOptions{Group: "fix-1", How: api.PickBranch}}))
	if res = result(t, out); code != 0 || res.Error == nil || res.Error.Code != api.CodeBadRequest || !strings.Contains(res.Error.Message, "group fix-1 is of no variant set") {
		t.Errorf("pick of a plain group: got %d, %q; want bad_request saying it is of no variant set", code, out)
	}

	// A message with a control character other than tab and newline (OSC 52, which `git log |
	// cat` would hand the terminal; a NUL, which no argument of git's can hold) is bad_request,
	// before anything runs: the folder is not even looked for.
	for _, msg := range []string{"\x1b]52;c;ZWNobyBoaQ==\x07", "a\x00b"} {
		o := worktree.Op{Op: worktree.OpPick, Pick: &worktree.PickOptions{Group: "fix-1", Message: msg}}
		b, _ := json.Marshal(o)
		out, _, code = runWorktree(t, strings.Replace(string(b), `"dir":""`, `"dir":"/nonexistent/folder"`, 1))
		if res = result(t, out); code != 0 || res.Error == nil || res.Error.Code != api.CodeBadRequest || !strings.Contains(res.Error.Message, "message holds the control character") {
			t.Errorf("pick with the message %q: got %d, %q; want bad_request naming the control character", msg, code, out)
		}
	}

	if _, errOut, code := runWorktree(t, op(worktree.Op{Op: worktree.OpGroups}), "--dir", "/"); code != ExitUsage || !strings.Contains(errOut, "unknown flag") {
		t.Errorf("a flag: got %d, %q; want a usage error", code, errOut)
	}
}

// TestWorktreeVerbHidden: krad-ade-agents --help does not offer the verb, which is the app's;
// its own --help still says what it does.
func TestWorktreeVerbHidden(t *testing.T) {
	out, _, code := runWorktree(t, "", "--help")
	if code != 0 || !strings.Contains(out, "one group operation") {
		t.Errorf("worktree --help: got %d, %q", code, out)
	}
	var help bytes.Buffer
	Run(context.Background(), []string{agentsProg, "--help"}, MapEnv(nil), strings.NewReader(""), &help, &help, Options{})
	if strings.Contains(help.String(), "worktree") || !strings.Contains(help.String(), "shell") {
		t.Errorf("krad-ade-agents --help lists worktree, or lists nothing:\n%s", help.String())
	}
}

// TestWorktreeVerbWithoutGit: where git is missing, the Result is worktree.Open's error, whole,
// saying what to install.
func TestWorktreeVerbWithoutGit(t *testing.T) {
	repo := gitRepo(t)
	t.Setenv("PATH", t.TempDir())
	out, _, code := runWorktree(t, `{"op":"groups","dir":`+jsonString(repo)+`}`)
	res := result(t, out)
	if code != 0 || res.Error == nil || res.Error.Code != api.CodeUnavailable ||
		res.Error.Message != "git is missing or too old: git not found on PATH: install it (Debian: apt-get install git)" {
		t.Errorf("got %d, %q; want unavailable, saying to install git", code, out)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// FuzzReadOp: readOp never panics; what it accepts is an Op that survives a round trip through
// JSON unchanged; what it refuses, it refuses with a message of bounded length that does not
// hold a control character of the input.
func FuzzReadOp(f *testing.F) {
	for _, s := range []string{
		`{"op":"create","dir":"/home/u/src","root":"/home/u/.krad-ade/worktrees","create":{"Name":"fix-1","Base":"main"},"hint":"Fix it","join":true}`,
		`{"op":"changes","dir":"/r","group":"g","changes":{"Stat":false,"MaxPatch":1048576,"Paths":["a/b","c"],"Binary":true}}`,
		`{"op":"groups","dir":""}`,
		`{"op":"retire","dir":"/r","group":"g"}  ` + "\n",
		`{"op":"groups","dir":"/r"}{}`,
		"{\"op\":\"groups\",\"dir\":\"\xff\"}",
		`{"op":"groups","Dir":"/r","DIR":"/s"}`,
		`{"create":null,"changes":{}}`,
		`{"op":"\u0000\u001b[2J"}`,
		``, `[]`, `null`, `{`, `{"op":`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		op, err := readOp(bytes.NewReader(in))
		if err != nil {
			if msg := err.Error(); len(msg) > 300 || strings.ContainsAny(msg, "\x1b\x00") {
				t.Fatalf("the error %q is too long or holds a control character", msg)
			}
			if !reflect.DeepEqual(op, worktree.Op{}) {
				t.Fatalf("an error with an Op: %+v", op)
			}
			return
		}
		b, err := json.Marshal(op)
		if err != nil {
			t.Fatalf("the Op read does not marshal: %v", err)
		}
		again, err := readOp(bytes.NewReader(b))
		if err != nil || !reflect.DeepEqual(again, op) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, op)
		}
	})
}
