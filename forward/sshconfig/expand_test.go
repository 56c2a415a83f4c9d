package sshconfig

import "testing"

func TestExpandTokens(t *testing.T) {
	vals := map[byte]string{'h': "build.example.com", 'p': "2222", 'r': "deploy", 'u': "me", 'd': "/home/me", 'n': "build"}
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "plain", want: "plain"},
		{in: "~/.ssh/id_%h", want: "~/.ssh/id_build.example.com"},
		{in: "%d/.ssh/%r@%h:%p", want: "/home/me/.ssh/deploy@build.example.com:2222"},
		{in: "%u-%n", want: "me-build"},
		{in: "100%%", want: "100%"},
		{in: "%%h", want: "%h"},
		{in: "%%%h", want: "%build.example.com"},
		{in: "a%", err: "'%' at the end"},
		{in: "%z", err: `unknown token "%z"`},
		{in: "%C", err: `unknown token "%C"`},
	} {
		got, err := expandTokens(tc.in, vals)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("expandTokens(%q) = %q, %v; want error %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("expandTokens(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExpandTilde(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"~", "/home/me"},
		{"~/.ssh/config", "/home/me/.ssh/config"},
		{"~other/x", "~other/x"},
		{"/etc/ssh/ssh_config", "/etc/ssh/ssh_config"},
		{"a~/b", "a~/b"},
	} {
		if got := expandTilde(tc.in, "/home/me"); got != tc.want {
			t.Errorf("expandTilde(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseHostSpec(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want hostSpec
		err  bool
	}{
		{in: "buildbox", want: hostSpec{Host: "buildbox"}},
		{in: "deploy@buildbox", want: hostSpec{User: "deploy", Host: "buildbox"}},
		{in: "buildbox:2222", want: hostSpec{Host: "buildbox", Port: 2222}},
		{in: "deploy@buildbox:2222", want: hostSpec{User: "deploy", Host: "buildbox", Port: 2222}},
		{in: "ssh://deploy@buildbox:2222", want: hostSpec{User: "deploy", Host: "buildbox", Port: 2222}},
		{in: " bastion ", want: hostSpec{Host: "bastion"}},
		{in: "[::1]:2222", want: hostSpec{Host: "::1", Port: 2222}},
		{in: "me@[fe80::1]", want: hostSpec{User: "me", Host: "fe80::1"}},
		{in: "::1", want: hostSpec{Host: "::1"}},
		{in: "a@b@host", want: hostSpec{User: "a@b", Host: "host"}},
		{in: "", err: true},
		{in: "@host", err: true},
		{in: "host:", err: true},
		{in: "host:0", err: true},
		{in: "host:65536", err: true},
		{in: "host:+22", err: true},
		{in: "host:ssh", err: true},
		{in: "[::1", err: true},
		{in: "[::1]x", err: true},
		{in: "user@", err: true},
		{in: "ho st", err: true},
		{in: "host\x00", err: true},
		{in: "-oProxyCommand=x", err: true},
		{in: "me@-p", err: true},
		{in: "a;b", err: true},
		{in: "$(x)", err: true},
		{in: "[fe80::1%eth0]:22", want: hostSpec{Host: "fe80::1%eth0", Port: 22}},
		{in: "build_01.example-2.com", want: hostSpec{Host: "build_01.example-2.com"}},
	} {
		got, err := parseHostSpec(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("parseHostSpec(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseHostSpec(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestHostSpecString(t *testing.T) {
	for _, tc := range []struct {
		in   hostSpec
		want string
	}{
		{hostSpec{Host: "h"}, "h"},
		{hostSpec{User: "u", Host: "h", Port: 2}, "u@h:2"},
		{hostSpec{Host: "::1", Port: 22}, "[::1]:22"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
