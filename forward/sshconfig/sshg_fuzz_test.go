package sshconfig

import (
	"strings"
	"testing"
)

// FuzzSSHG holds the app's resolution against ssh -G on configs made from a small grammar that
// the fuzzer's input drives: Host and Match blocks of every kind, the options Host has, written
// with the separators, quotes and key cases ssh reads, and an included file made the same way.
// A config ssh refuses is skipped; on any other, every field must agree.
func FuzzSSHG(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("Match host final exec"))
	f.Add([]byte{1, 40, 7, 2, 9, 200, 13, 77, 5, 3, 3, 1, 0, 250, 8})
	e := newSSHGEnv(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 200 {
			return
		}
		g := &sshgGrammar{data: data}
		c := sshgCase{
			config: g.file(true),
			files:  map[string]string{"{{dir}}/inc.conf": g.file(false)},
		}
		dest := g.pick(sshgDests)
		file := e.write(t, c)
		r := e.compare(t, file, dest)
		if r.complaint != "" {
			return
		}
		for _, d := range r.diffs {
			t.Errorf("%s: %s", dest, d)
		}
		if len(r.diffs) > 0 {
			t.Logf("config:\n%s\ninc.conf:\n%s", e.expand(c.config), e.expand(c.files["{{dir}}/inc.conf"]))
		}
	})
}

var sshgDests = []string{"a", "A", "bx", "u@c:2200", "x.example", "deploy@a"}

// sshgGrammar makes config files from fuzz input: each byte picks the next choice.
type sshgGrammar struct {
	data []byte
	i    int
}

// next returns the next byte, 0 past the end.
func (g *sshgGrammar) next() int {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return int(g.data[g.i-1])
}

func (g *sshgGrammar) pick(from []string) string { return from[g.next()%len(from)] }

var (
	sshgPatterns   = []string{"a", "b*", "?x", "!a", "*", "A", "x.example", "*.example", "c", "!b?"}
	sshgHostLists  = []string{"a", "b*,c", "!a,*", "x.example", "A", "*.EXAMPLE", "?"}
	sshgUserLists  = []string{"u", "deploy", "{{local}}", "!u,*", "d*"}
	sshgCriteria   = []string{"host H", "!host H", "originalhost H", "user U", "!user U", "localuser U", "exec true", "exec false", `exec "test %h = x.example"`, `exec "test %n = A"`, "final", "canonical", "!final", "host=H"}
	sshgSeparators = []string{" ", "=", " = ", "\t", "  "}
	sshgKeyCase    = []func(string) string{func(s string) string { return s }, strings.ToLower, strings.ToUpper}
	sshgOptions    = []struct {
		key    string
		values []string
	}{
		{"HostName", []string{"%h.example", "x.example", "A.Example", "b", "10.0.0.1", "FE80::1"}},
		{"Port", []string{"2200", "22", "7"}},
		{"User", []string{"u", "deploy", `"quoted"`}},
		{"IdentityFile", []string{"~/.ssh/id_%h", "%d/k_%r_%p", "none", `"~/.ssh/with space"`, "rel/key_%n", "~/.ssh/id_%u_%k"}},
		{"UserKnownHostsFile", []string{"~/.ssh/kh1 ~/.ssh/kh_%h", "none", `"~/.ssh/kh one" %d/kh2`}},
		{"GlobalKnownHostsFile", []string{"/etc/g1", "none", `'/etc/g 2' /etc/g3`}},
		{"HostKeyAlias", []string{"alias1", "none", "Alias2"}},
		{"StrictHostKeyChecking", []string{"yes", "no", "ask", "accept-new", "off", "true", "false"}},
		{"HashKnownHosts", []string{"yes", "no"}},
		{"IdentitiesOnly", []string{"yes", "no"}},
		{"IdentityAgent", []string{"none", "~/agent_%h", "/run/agent"}},
		{"ConnectTimeout", []string{"5", "1m", "0"}},
		{"ServerAliveInterval", []string{"0", "30", "1m30s"}},
		{"ServerAliveCountMax", []string{"0", "5"}},
		{"ProxyCommand", []string{"nc %h %p", "none", "ssh -W %h:%p %n # c %%"}},
		{"ProxyJump", []string{"none", "a", "u@c:2222", "b1,c", "ssh://d@x.example:2200"}},
		{"CanonicalizeHostname", []string{"no"}}, // yes looks names up in DNS, which the app does not
	}
)

// file writes a config of up to 8 lines; main says whether it may Include the other file.
func (g *sshgGrammar) file(main bool) string {
	var b strings.Builder
	for range 8 {
		if g.i >= len(g.data) {
			break
		}
		switch g.next() % 8 {
		case 0:
			b.WriteString("Host")
			for k := g.next()%3 + 1; k > 0; k-- {
				b.WriteString(" " + g.pick(sshgPatterns))
			}
		case 1:
			b.WriteString("Match")
			for k := g.next()%2 + 1; k > 0; k-- {
				c := g.pick(sshgCriteria)
				c = strings.ReplaceAll(c, "H", g.pick(sshgHostLists))
				c = strings.ReplaceAll(c, "U", g.pick(sshgUserLists))
				b.WriteString(" " + c)
			}
		case 2:
			if main {
				b.WriteString("Include {{dir}}/inc.conf")
			} else {
				b.WriteString("# a comment")
			}
		default:
			o := sshgOptions[g.next()%len(sshgOptions)]
			b.WriteString("  " + sshgKeyCase[g.next()%len(sshgKeyCase)](o.key) + g.pick(sshgSeparators) + g.pick(o.values))
		}
		b.WriteString("\n")
	}
	return b.String()
}
