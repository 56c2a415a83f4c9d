package api

import (
	"slices"
	"strings"
	"testing"
)

// The variables of the spec's authentication page, "Inside the app's terminals", written out by
// hand: a terminal of this computer gets the token and its file, a terminal of an SSH host the
// file only, and both get the endpoint, the terminal and the app's folder first on PATH.
func TestTerminalVarsEnv(t *testing.T) {
	tok, err := ParseToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		vars TerminalVars
		id   TerminalID
		want []string
	}{
		{
			"this computer",
			TerminalVars{Endpoint: "127.0.0.1:52144", Token: tok, TokenFile: "/home/u/.krad-ade/run/app-1/token", BinDir: "/opt/krad-ade", Path: "/usr/bin:/bin"},
			TerminalID{Environment: "main", Terminal: 4},
			[]string{
				"KRAD_ADE_ENDPOINT=127.0.0.1:52144",
				"KRAD_ADE_TOKEN=" + secret,
				"KRAD_ADE_TOKEN_FILE=/home/u/.krad-ade/run/app-1/token",
				"KRAD_ADE_TERMINAL=main:4",
				"PATH=/opt/krad-ade:/usr/bin:/bin",
			},
		},
		{
			"an SSH host",
			TerminalVars{Endpoint: "127.0.0.1:41877", TokenFile: "/home/u/.krad-ade/run/main/token", BinDir: "/home/u/.krad-ade/bin/0.1.0",
				Path: "/home/u/.krad-ade/bin/0.1.0:/usr/bin:/home/u/.krad-ade/bin/0.1.0/:/bin"},
			TerminalID{Environment: "build", Terminal: 3},
			[]string{
				"KRAD_ADE_ENDPOINT=127.0.0.1:41877",
				"KRAD_ADE_TOKEN_FILE=/home/u/.krad-ade/run/main/token",
				"KRAD_ADE_TERMINAL=build:3",
				"PATH=/home/u/.krad-ade/bin/0.1.0:/usr/bin:/bin",
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.vars.Env(tt.id); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	ssh := TerminalVars{Endpoint: "127.0.0.1:41877", TokenFile: "/t/token", BinDir: "/b"}
	for _, kv := range ssh.Env(TerminalID{Environment: "build", Terminal: 3}) {
		if strings.HasPrefix(kv, "KRAD_ADE_TOKEN=") {
			t.Errorf("got %q: the token never goes in a host's environment", kv)
		}
	}
}

// A session holds what every window of it gets, and drops what none may have: each window's own
// terminal, and on an SSH host the token (a session an earlier version made may hold them).
func TestTerminalVarsSession(t *testing.T) {
	tok, err := ParseToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name       string
		vars       TerminalVars
		set, unset []string
	}{
		{
			"this computer",
			TerminalVars{Endpoint: "127.0.0.1:52144", Token: tok, TokenFile: "/t/token", BinDir: "/opt/krad-ade", Path: "/bin"},
			[]string{"KRAD_ADE_ENDPOINT=127.0.0.1:52144", "KRAD_ADE_TOKEN=" + secret, "KRAD_ADE_TOKEN_FILE=/t/token", "PATH=/opt/krad-ade:/bin"},
			[]string{"KRAD_ADE_TERMINAL", "KRAD_ADE_GROUP", "KRAD_ADE_PORT"},
		},
		{
			"an SSH host",
			TerminalVars{Endpoint: "127.0.0.1:41877", TokenFile: "/t/token", BinDir: "/b", Path: "/bin"},
			[]string{"KRAD_ADE_ENDPOINT=127.0.0.1:41877", "KRAD_ADE_TOKEN_FILE=/t/token", "PATH=/b:/bin"},
			[]string{"KRAD_ADE_TOKEN", "KRAD_ADE_TERMINAL", "KRAD_ADE_GROUP", "KRAD_ADE_PORT"},
		},
		{
			"no token file",
			TerminalVars{Endpoint: "127.0.0.1:52144", Token: tok, BinDir: "/b"},
			[]string{"KRAD_ADE_ENDPOINT=127.0.0.1:52144", "KRAD_ADE_TOKEN=" + secret, "PATH=/b"},
			[]string{"KRAD_ADE_TOKEN_FILE", "KRAD_ADE_TERMINAL", "KRAD_ADE_GROUP", "KRAD_ADE_PORT"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, unset := tt.vars.Session()
			if !slices.Equal(set, tt.set) || !slices.Equal(unset, tt.unset) {
				t.Errorf("got set %q, unset %q; want set %q, unset %q", set, unset, tt.set, tt.unset)
			}
		})
	}
}

func TestPathFirst(t *testing.T) {
	for _, tt := range []struct {
		dir, path, want string
	}{
		{"/b", "/usr/bin:/bin", "/b:/usr/bin:/bin"},
		{"/b", "", "/b"},
		{"/b", "/b", "/b"},
		{"/b", "/usr/bin:/b:/bin", "/b:/usr/bin:/bin"},
		{"/b", "/b/:/usr/bin:/b//", "/b:/usr/bin"},
		{"/b/", "/b:/bin", "/b/:/bin"},
		{"/b", "/usr/bin::/bin:", "/b:/usr/bin:/bin"}, // an empty entry is the current folder
		{"/b", ":/bin", "/b:/bin"},
		{"/b", "/bin:/usr/bin:/bin", "/b:/bin:/usr/bin:/bin"}, // only dir is taken out
		{"", "/usr/bin::/bin", "/usr/bin:/bin"},
	} {
		if got := PathFirst(tt.dir, tt.path); got != tt.want {
			t.Errorf("PathFirst(%q, %q) = %q, want %q", tt.dir, tt.path, got, tt.want)
		}
	}
}

// TestAskpassVars: Askpass sets GIT_ASKPASS to the folder's krad-ade-askpass, SSHAskpass
// SSH_ASKPASS with SSH_ASKPASS_REQUIRE=force; neither is ever unset (a user's own stays). A git
// the app runs itself gets the askpass, the bus's variables with the token as its file when there
// is one, no terminal and KRAD_ADE_GIT; nothing without Askpass.
func TestAskpassVars(t *testing.T) {
	tok, _ := NewToken()
	v := TerminalVars{Endpoint: "127.0.0.1:5", Token: tok, TokenFile: "/t/token", BinDir: "/b", Path: "/bin", Askpass: true, SSHAskpass: true}
	set, unset := v.Session()
	for _, want := range []string{"GIT_ASKPASS=/b/krad-ade-askpass", "SSH_ASKPASS=/b/krad-ade-askpass", "SSH_ASKPASS_REQUIRE=force"} {
		if !slices.Contains(set, want) {
			t.Errorf("the session's variables %q lack %s", set, want)
		}
	}
	for _, name := range unset {
		if strings.Contains(name, "ASKPASS") {
			t.Errorf("the session unsets %s", name)
		}
	}
	key, _ := NewToken()
	got := strings.Join(v.AppGitEnv("build", key), " ")
	if want := "GIT_ASKPASS=/b/krad-ade-askpass KRAD_ADE_ENDPOINT=127.0.0.1:5 KRAD_ADE_TOKEN= KRAD_ADE_TOKEN_FILE=/t/token KRAD_ADE_TERMINAL= KRAD_ADE_GIT=build KRAD_ADE_ASKPASS_KEY=" + key.Reveal(); got != want {
		t.Errorf("AppGitEnv = %s, want %s", got, want)
	}
	v.TokenFile = ""
	if got := v.AppGitEnv("main", key); !slices.Contains(got, "KRAD_ADE_TOKEN="+tok.Reveal()) || !slices.Contains(got, "KRAD_ADE_TOKEN_FILE=") {
		t.Errorf("AppGitEnv without a token file: %q, want the token", got)
	}
	v.Askpass = false
	if got := v.AppGitEnv("main", key); got != nil {
		t.Errorf("AppGitEnv without Askpass: %q, want nothing", got)
	}
}
