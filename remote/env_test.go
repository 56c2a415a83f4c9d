package remote

import (
	"slices"
	"strings"
	"testing"
)

func TestVarsEnv(t *testing.T) {
	v := Vars{
		Endpoint:  "127.0.0.1:41877",
		TokenFile: "/home/u/.krad-ade/run/main/token",
		Terminal:  "build:3",
		BinDir:    "/home/u/.krad-ade/bin/0.1.0",
		Path:      "/home/u/.krad-ade/bin/0.1.0:/usr/bin:/home/u/.krad-ade/bin/0.1.0/:/bin",
	}
	got, err := v.Env()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"KRAD_ADE_ENDPOINT=127.0.0.1:41877",
		"KRAD_ADE_TOKEN_FILE=/home/u/.krad-ade/run/main/token",
		"KRAD_ADE_TERMINAL=build:3",
		"PATH=/home/u/.krad-ade/bin/0.1.0:/usr/bin:/bin",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, kv := range got {
		if strings.HasPrefix(kv, "KRAD_ADE_TOKEN=") {
			t.Errorf("got %q: the token never goes in a host's environment", kv)
		}
	}

	v.Path = ""
	got, _ = v.Env()
	if p := got[3]; p != "PATH=/home/u/.krad-ade/bin/0.1.0:"+DefaultPath {
		t.Errorf("got %q, want the installed folder, then the default PATH", p)
	}
	v.Endpoint = "[::1]:41877"
	if got, err := v.Env(); err != nil || got[0] != "KRAD_ADE_ENDPOINT=[::1]:41877" {
		t.Errorf("IPv6 loopback: got %q, %v", got, err)
	}
}

func TestVarsEnvRefuses(t *testing.T) {
	ok := Vars{Endpoint: "127.0.0.1:41877", TokenFile: "/t/token", Terminal: "build:3", BinDir: "/b"}
	for _, tt := range []struct {
		name string
		edit func(*Vars)
	}{
		{"no endpoint", func(v *Vars) { v.Endpoint = "" }},
		{"all interfaces", func(v *Vars) { v.Endpoint = "0.0.0.0:41877" }},
		{"another address", func(v *Vars) { v.Endpoint = "192.0.2.1:41877" }},
		{"a name", func(v *Vars) { v.Endpoint = "localhost:41877" }},
		{"port 0", func(v *Vars) { v.Endpoint = "127.0.0.1:0" }},
		{"relative token file", func(v *Vars) { v.TokenFile = "token" }},
		{"token file with a newline", func(v *Vars) { v.TokenFile = "/t/to\nken" }},
		{"relative folder", func(v *Vars) { v.BinDir = "bin" }},
		{"folder with a colon", func(v *Vars) { v.BinDir = "/a:b" }},
		{"no terminal", func(v *Vars) { v.Terminal = "" }},
		{"terminal with an escape", func(v *Vars) { v.Terminal = "build:\x1b3" }},
		{"PATH with a newline", func(v *Vars) { v.Path = "/bin\n/usr/bin" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := ok
			tt.edit(&v)
			if got, err := v.Env(); err == nil {
				t.Errorf("got %q, want an error", got)
			}
		})
	}
	if _, err := ok.Env(); err != nil {
		t.Errorf("the unedited Vars: %v", err)
	}
}
