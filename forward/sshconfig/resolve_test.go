package sshconfig

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// resolveWith writes user and system ssh_config files into a fresh home and resolves host
// through them with cfg's other fields.
func resolveWith(t *testing.T, cfg Options, user, system string) (*Host, []Warning, error, string) {
	t.Helper()
	home := t.TempDir()
	cfg.Home = home
	cfg.UserConfig, cfg.SystemConfig = None, None
	if user != "" {
		cfg.UserConfig = filepath.Join(home, "config")
		if err := os.WriteFile(cfg.UserConfig, []byte(user), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if system != "" {
		cfg.SystemConfig = filepath.Join(home, "system_config")
		if err := os.WriteFile(cfg.SystemConfig, []byte(system), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, w, err := Resolve(cfg)
	return h, w, err, home
}

func TestResolveDefaults(t *testing.T) {
	h, w, err, home := resolveWith(t, Options{Host: "buildbox"}, "", "")
	if err != nil || len(w) != 0 {
		t.Fatalf("Resolve = %v, %v", err, w)
	}
	want := &Host{
		Alias: "buildbox", HostName: "buildbox", Port: 22, User: localUser(),
		IdentityFiles:         []string{home + "/.ssh/id_rsa", home + "/.ssh/id_ecdsa", home + "/.ssh/id_ed25519"},
		KnownHostsFiles:       []string{home + "/.ssh/known_hosts", home + "/.ssh/known_hosts2"},
		GlobalKnownHostsFiles: []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
		StrictHostKeyChecking: "ask",
		ConnectTimeout:        15 * time.Second,
		ServerAliveInterval:   15 * time.Second,
		ServerAliveCountMax:   3,
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("Resolve:\n got %+v\nwant %+v", h, want)
	}
}

func TestResolve(t *testing.T) {
	const user = `
# The user's file.
Host build
  HostName %h.example.com
  Port 2200
  User deploy
  IdentityFile ~/.ssh/id_%h_%r
  IdentityFile %d/keys/%n-%p
  IdentitiesOnly yes
  UserKnownHostsFile ~/.ssh/known_%h:%p ~/.ssh/other_known
  HostKeyAlias buildalias
  StrictHostKeyChecking accept-new
  HashKnownHosts yes
  ConnectTimeout 7
  ServerAliveInterval 1m30s
  ServerAliveCountMax 5

Host jumped
  HostName 10.0.0.9
  ProxyJump ops@bastion:2022,inner

Host bastion
  HostName bastion.example.com
  User ignored-because-the-jump-names-ops
  Port 9999
  ProxyJump outer

Host inner
  HostName inner.internal
  ProxyJump must-be-ignored

Host outer
  HostName outer.example.com

Host loop1
  ProxyJump loop2
Host loop2
  ProxyJump loop1

Host pc
  HostName pc.example.com
  Port 2222
  User deploy
  ProxyCommand ssh -W %h:%p -l %r %n %%h

Host pcnone
  ProxyCommand none

Host pcjump
  ProxyCommand nc %h %p
  ProxyJump bastion

Host pcjumpnone
  ProxyJump none
  ProxyCommand nc %h %p

Host pcbadtoken
  ProxyCommand nc %h %d

Host viapc
  ProxyJump pcfirst,pcsecond
Host pcfirst
  HostName first.example.com
  ProxyCommand nc %h %p
Host pcsecond
  ProxyCommand must-be-ignored

Host nojump
  ProxyJump none

Host noids
  IdentityFile none

Host strictoff
  StrictHostKeyChecking off

Host badstrict
  StrictHostKeyChecking maybe

Host badport
  Port 70000

Host badtoken
  IdentityFile ~/.ssh/%Z

Host badname
  HostName evil;rm

Host badtimeout
  ConnectTimeout soon

Host zero
  ServerAliveInterval 0

Host *
  User everyone
`
	const system = `
Host build
  Port 1111
Host sys
  Port 2022
  User sysuser
`
	tests := []struct {
		name  string
		cfg   Options
		check func(t *testing.T, h *Host, home string)
		err   string
	}{
		{name: "build", cfg: Options{Host: "build"}, check: func(t *testing.T, h *Host, home string) {
			want := &Host{
				Alias: "build", HostName: "build.example.com", Port: 2200, User: "deploy",
				IdentityFiles:         []string{home + "/.ssh/id_build.example.com_deploy", home + "/keys/build-2200"},
				IdentitiesOnly:        true,
				KnownHostsFiles:       []string{home + "/.ssh/known_build.example.com:2200", home + "/.ssh/other_known"},
				GlobalKnownHostsFiles: []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				HostKeyAlias:          "buildalias",
				StrictHostKeyChecking: "accept-new",
				HashKnownHosts:        true,
				ConnectTimeout:        7 * time.Second,
				ServerAliveInterval:   90 * time.Second,
				ServerAliveCountMax:   5,
			}
			if !reflect.DeepEqual(h, want) {
				t.Errorf("got  %+v\nwant %+v", h, want)
			}
		}},
		{name: "user and port on the command line win", cfg: Options{Host: "root@build:2201"}, check: func(t *testing.T, h *Host, _ string) {
			if h.User != "root" || h.Port != 2201 || h.HostName != "build.example.com" {
				t.Errorf("got %s, want root@build.example.com:2201", h)
			}
			if !strings.Contains(h.IdentityFiles[0], "_root") {
				t.Errorf("IdentityFile %%r = %s, want the command line's user", h.IdentityFiles[0])
			}
		}},
		{name: "Options override", cfg: Options{Host: "build", ConnectTimeout: time.Second, ServerAliveInterval: 200 * time.Millisecond, ServerAliveCountMax: 2},
			check: func(t *testing.T, h *Host, _ string) {
				if h.ConnectTimeout != time.Second || h.ServerAliveInterval != 200*time.Millisecond || h.ServerAliveCountMax != 2 {
					t.Errorf("got %s, %s × %d; want 1s, 200ms × 2", h.ConnectTimeout, h.ServerAliveInterval, h.ServerAliveCountMax)
				}
			}},
		{name: "system file", cfg: Options{Host: "sys"}, check: func(t *testing.T, h *Host, _ string) {
			// The user's Host * gives User first; the system file gives Port.
			if h.Port != 2022 || h.User != "everyone" {
				t.Errorf("got %s, want everyone@sys:2022", h)
			}
		}},
		{name: "multi-hop ProxyJump", cfg: Options{Host: "jumped"}, check: func(t *testing.T, h *Host, _ string) {
			var got []string
			for _, j := range h.Jump {
				got = append(got, j.User+"@"+j.HostName+":"+strconv.Itoa(j.Port))
				if len(j.Jump) != 0 {
					t.Errorf("hop %s has hops of its own; want them flattened", j)
				}
			}
			// bastion's own ProxyJump (outer) comes first; inner's ProxyJump is ignored, as ssh
			// -J bastion,inner does.
			want := []string{"everyone@outer.example.com:22", "ops@bastion.example.com:2022", "everyone@inner.internal:22"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("hops = %q, want %q", got, want)
			}
			if h.HostName != "10.0.0.9" || h.Port != 22 {
				t.Errorf("target = %s", h)
			}
		}},
		{name: "ProxyJump none", cfg: Options{Host: "nojump"}, check: func(t *testing.T, h *Host, _ string) {
			if len(h.Jump) != 0 {
				t.Errorf("hops = %v, want none", h.Jump)
			}
		}},
		{name: "ProxyCommand", cfg: Options{Host: "pc"}, check: func(t *testing.T, h *Host, _ string) {
			if want := "ssh -W pc.example.com:2222 -l deploy pc %h"; h.ProxyCommand != want {
				t.Errorf("ProxyCommand = %q, want %q", h.ProxyCommand, want)
			}
			if len(h.Jump) != 0 {
				t.Errorf("hops = %v, want none", h.Jump)
			}
		}},
		{name: "ProxyCommand with the command line's user and port", cfg: Options{Host: "root@pc:2201"}, check: func(t *testing.T, h *Host, _ string) {
			if want := "ssh -W pc.example.com:2201 -l root pc %h"; h.ProxyCommand != want {
				t.Errorf("ProxyCommand = %q, want %q", h.ProxyCommand, want)
			}
		}},
		{name: "ProxyCommand none", cfg: Options{Host: "pcnone"}, check: func(t *testing.T, h *Host, _ string) {
			if h.ProxyCommand != "" {
				t.Errorf("ProxyCommand = %q, want none", h.ProxyCommand)
			}
		}},
		{name: "ProxyCommand beside ProxyJump none", cfg: Options{Host: "pcjumpnone"}, check: func(t *testing.T, h *Host, _ string) {
			if h.ProxyCommand != "nc pcjumpnone 22" || len(h.Jump) != 0 {
				t.Errorf("ProxyCommand = %q, hops %v; want nc pcjumpnone 22 and no hop", h.ProxyCommand, h.Jump)
			}
		}},
		{name: "ProxyCommand of the first hop only", cfg: Options{Host: "viapc"}, check: func(t *testing.T, h *Host, _ string) {
			if len(h.Jump) != 2 {
				t.Fatalf("hops = %v, want pcfirst and pcsecond", h.Jump)
			}
			// ssh -J pcfirst,pcsecond runs pcfirst's ProxyCommand, and reaches pcsecond
			// through pcfirst whatever pcsecond's says.
			if got := h.Jump[0].ProxyCommand; got != "nc first.example.com 22" {
				t.Errorf("first hop's ProxyCommand = %q, want nc first.example.com 22", got)
			}
			if got := h.Jump[1].ProxyCommand; got != "" {
				t.Errorf("second hop's ProxyCommand = %q, want none", got)
			}
			if h.ProxyCommand != "" {
				t.Errorf("target's ProxyCommand = %q, want none", h.ProxyCommand)
			}
		}},
		{name: "IdentityFile none", cfg: Options{Host: "noids"}, check: func(t *testing.T, h *Host, _ string) {
			if len(h.IdentityFiles) != 0 {
				t.Errorf("IdentityFiles = %q, want none", h.IdentityFiles)
			}
		}},
		{name: "StrictHostKeyChecking off", cfg: Options{Host: "strictoff"}, check: func(t *testing.T, h *Host, _ string) {
			if h.StrictHostKeyChecking != "no" {
				t.Errorf("StrictHostKeyChecking = %q, want no", h.StrictHostKeyChecking)
			}
		}},
		{name: "ServerAliveInterval 0 turns keepalives off", cfg: Options{Host: "zero"}, check: func(t *testing.T, h *Host, _ string) {
			if h.ServerAliveInterval != 0 {
				t.Errorf("ServerAliveInterval = %s, want 0", h.ServerAliveInterval)
			}
		}},
		{name: "ProxyCommand before ProxyJump", cfg: Options{Host: "pcjump"}, check: func(t *testing.T, h *Host, _ string) {
			// ssh takes whichever comes first.
			if h.ProxyCommand != "nc pcjump 22" || len(h.Jump) != 0 {
				t.Errorf("ProxyCommand = %q, hops %v; want nc pcjump 22 and no hop", h.ProxyCommand, h.Jump)
			}
		}},
		{name: "Options.KnownHosts", cfg: Options{Host: "other", KnownHosts: "~/kh"}, check: func(t *testing.T, h *Host, home string) {
			if !reflect.DeepEqual(h.KnownHostsFiles, []string{home + "/kh"}) {
				t.Errorf("KnownHostsFiles = %q", h.KnownHostsFiles)
			}
		}},
		{name: "ProxyJump loop", cfg: Options{Host: "loop1"}, err: "more than 8 hops"},
		{name: "ProxyCommand bad token", cfg: Options{Host: "pcbadtoken"}, err: `ProxyCommand: unknown token "%d"`},
		{name: "ProxyCommand user the shell would read", cfg: Options{Host: "x;reboot@pc"}, err: `ProxyCommand: user x;reboot has characters the shell would act on`},
		{name: "bad StrictHostKeyChecking", cfg: Options{Host: "badstrict"}, err: "maybe is not"},
		{name: "bad port", cfg: Options{Host: "badport"}, err: "Port: bad port 70000"},
		{name: "bad token", cfg: Options{Host: "badtoken"}, err: `IdentityFile: unknown token "%Z"`},
		{name: "bad HostName", cfg: Options{Host: "badname"}, err: "HostName: evil;rm is not a host name"},
		{name: "bad timeout", cfg: Options{Host: "badtimeout"}, err: "ConnectTimeout: soon is not a time"},
		{name: "bad host", cfg: Options{Host: "a b"}, err: "not a host name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, w, err, home := resolveWith(t, tc.cfg, user, system)
			if len(w) != 0 {
				t.Errorf("warnings: %v", w)
			}
			if tc.err != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Resolve = %v, want a *ConfigError saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			tc.check(t, h, home)
		})
	}
}

func TestResolveSkipsUnreadableLines(t *testing.T) {
	const user = `Host build
  User deploy
Match nosuch criterion
  User matched-nosuch
  Port 1
Host "unclosed
  Port 2
  IdentityFile a b
Host build
  Port 2200
  HostName build.example.com
`
	h, w, err, home := resolveWith(t, Options{Host: "build"}, user, "")
	if err != nil {
		t.Fatal(err)
	}
	if h.User != "deploy" || h.Port != 2200 || h.HostName != "build.example.com" {
		t.Errorf("got %s, want deploy@build.example.com:2200 (the bad blocks left out, the rest read)", h)
	}
	file := filepath.Join(home, "config")
	if len(w) != 3 || w[0].File != file || w[0].Line != 3 || w[1].Line != 6 || w[2].Line != 8 {
		t.Fatalf("warnings = %+v, want lines 3, 6 and 8 of %s", w, file)
	}
	if !strings.Contains(w[0].Reason, "unsupported criterion nosuch") || !strings.Contains(w[0].Reason, "apply to no host") {
		t.Errorf("warning = %q", w[0].Reason)
	}
	if !strings.Contains(w[1].Reason, "quote is not closed") || !strings.Contains(w[2].Reason, "extra arguments") {
		t.Errorf("warnings = %q, %q", w[1].Reason, w[2].Reason)
	}
	if got, want := w[0].String(), file+":3: skipped: "; !strings.HasPrefix(got, want) {
		t.Errorf("Warning.String() = %q, want it to start with %q", got, want)
	}
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"", 0, false},
		{"0", 0, false},
		{"30", 30 * time.Second, false},
		{"1m30s", 90 * time.Second, false},
		{"2H", 2 * time.Hour, false},
		{"1w1d", 8 * 24 * time.Hour, false},
		{"10x", 0, true},
		{"m", 0, true},
		{"-1", 0, true},
		{"1.5", 0, true},
	} {
		got, err := seconds(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("seconds(%q) = %s, %v; want %s (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}
