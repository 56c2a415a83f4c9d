package sshconfig

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krad-ade/krad/kradtest/testbin"
)

// The differential test: ssh_config files resolved by this package and by the real OpenSSH
// client's own resolver, ssh -G, compared field by field for every field Host has. Where the app
// differs from ssh on purpose (its own keepalive and connect-timeout defaults, the default
// identity files it can use, relative paths taken from ~/.ssh, host:port destinations) the
// expected value is ssh's mapped by the rule the README states, in sshExpect; nothing else is
// forgiven.

// sshgEnv is what both resolvers are run with: the same home (ssh takes "~" and %d from the
// password database, and a relative Include from $HOME; the test maps the first to home), the
// same user, and /bin/sh for Match exec.
type sshgEnv struct {
	ssh   string // the ssh program
	home  string // Options.Home, and ssh's $HOME
	pwDir string // ssh's "~": the password database's home of the user
	local string // the local user name, ssh's %u
	dir   string // a folder for the case's files
}

func newSSHGEnv(t testing.TB) *sshgEnv {
	t.Helper()
	prog := testbin.Need(t, "ssh", "openssh-client")
	u, err := user.Current()
	if err != nil {
		t.Skipf("no user in the password database: %v", err)
	}
	if len(u.HomeDir) < 2 {
		t.Skipf("home %q cannot be told apart in ssh's output", u.HomeDir)
	}
	root := t.TempDir()
	e := &sshgEnv{ssh: prog, home: filepath.Join(root, "home"), pwDir: filepath.Clean(u.HomeDir), local: u.Username, dir: filepath.Join(root, "cfg")}
	for _, d := range []string{filepath.Join(e.home, ".ssh"), e.dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// expand replaces the test's placeholders in s: {{dir}}, {{home}} and {{local}}.
func (e *sshgEnv) expand(s string) string {
	return strings.NewReplacer("{{dir}}", e.dir, "{{home}}", e.home, "{{local}}", e.local).Replace(s)
}

// sshgCase is a config, the files it includes, and the destinations resolved through it.
type sshgCase struct {
	name   string
	config string
	files  map[string]string // path (with placeholders) → contents
	dests  []string          // as Options.Host takes them
}

// write writes c's files into e's folders and returns the config's path.
func (e *sshgEnv) write(t testing.TB, c sshgCase) string {
	t.Helper()
	os.RemoveAll(e.dir)
	os.RemoveAll(filepath.Join(e.home, ".ssh"))
	for _, d := range []string{filepath.Join(e.home, ".ssh"), e.dir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range c.files {
		p := e.expand(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(e.expand(data)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(e.dir, "config")
	if err := os.WriteFile(file, []byte(e.expand(c.config)), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// sshOut is what ssh -G printed: each key's lines, in order.
type sshOut map[string][]string

func (o sshOut) get(k string) string {
	if v := o[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// runSSH runs ssh -G with args, and again with a last block that sets ServerAliveInterval, to
// tell whether the config set it: ssh prints 0 both for an explicit 0 and for nothing. It
// returns nil and ssh's complaint when ssh refuses the config.
func (e *sshgEnv) runSSH(t testing.TB, file string, args ...string) (sshOut, string) {
	t.Helper()
	run := func(file string) (sshOut, string) {
		cmd := exec.Command(e.ssh, append([]string{"-G", "-F", file}, args...)...)
		cmd.Env = []string{"HOME=" + e.home, "USER=" + e.local, "LOGNAME=" + e.local, "SHELL=/bin/sh", "PATH=" + os.Getenv("PATH")}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.Dir = e.dir
		out, err := cmd.Output()
		if err != nil {
			return nil, strings.TrimSpace(stderr.String())
		}
		o := sshOut{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), " ")
			o[k] = append(o[k], v)
		}
		return o, ""
	}
	o, complaint := run(file)
	if o == nil || o.get("serveraliveinterval") != "0" {
		return o, complaint
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	probe := file + ".probe"
	if err := os.WriteFile(probe, append(data, "\nHost *\n  ServerAliveInterval 86399\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(probe)
	if p, _ := run(probe); p != nil && p.get("serveraliveinterval") == "86399" {
		o["serveraliveinterval-unset"] = []string{"yes"}
	}
	return o, ""
}

// sshResolved is one host of ssh's chain: ssh -G's output for it and the destination's host as
// ssh was given it (its %n).
type sshResolved struct {
	out  sshOut
	host string
}

// sshChain resolves dest (as Options.Host takes it) as ssh does, with ssh -G: the host, and the
// hops of its ProxyJump, each as ssh's own ProxyCommand for -J runs it (ssh -l USER -p PORT -J
// REST -F FILE HOST), first hop first. A refused config is ssh's complaint.
func (e *sshgEnv) sshChain(t testing.TB, file, dest string) (hops []sshResolved, target sshResolved, complaint string) {
	hs, err := parseHostSpec(dest)
	if err != nil {
		t.Fatalf("destination %q: %v", dest, err)
	}
	var args []string
	if hs.User != "" {
		args = append(args, "-l", hs.User)
	}
	if hs.Port != 0 {
		args = append(args, "-p", strconv.Itoa(hs.Port))
	}
	return e.sshChainArgs(t, file, args, hs.Host, 0)
}

func (e *sshgEnv) sshChainArgs(t testing.TB, file string, args []string, host string, depth int) ([]sshResolved, sshResolved, string) {
	out, complaint := e.runSSH(t, file, append(args, host)...)
	if out == nil {
		return nil, sshResolved{}, complaint
	}
	r := sshResolved{out: out, host: host}
	jump := out.get("proxyjump")
	if jump == "" || strings.EqualFold(jump, "none") {
		return nil, r, ""
	}
	if depth > maxJumps {
		return nil, r, "ProxyJump loops"
	}
	rest, last := "", jump
	if i := strings.LastIndexByte(jump, ','); i >= 0 {
		rest, last = jump[:i], jump[i+1:]
	}
	hs, err := parseHostSpec(last)
	if err != nil {
		return nil, r, fmt.Sprintf("ProxyJump hop %q: %v", last, err)
	}
	var hopArgs []string
	if hs.User != "" {
		hopArgs = append(hopArgs, "-l", hs.User)
	}
	if hs.Port != 0 {
		hopArgs = append(hopArgs, "-p", strconv.Itoa(hs.Port))
	}
	if rest != "" {
		hopArgs = append(hopArgs, "-J", rest)
	}
	before, hop, complaint := e.sshChainArgs(t, file, hopArgs, hs.Host, depth+1)
	if complaint != "" {
		return nil, r, complaint
	}
	return append(before, hop), r, ""
}

// sshgFields are the fields compared, in the order they are reported.
var sshgFields = []string{
	"hostname", "port", "user", "identityfile", "identitiesonly", "identityagent",
	"userknownhostsfile", "globalknownhostsfile", "hostkeyalias", "stricthostkeychecking",
	"hashknownhosts", "connecttimeout", "serveraliveinterval", "serveralivecountmax",
	"proxycommand",
}

// sshDefaultIdentities are the identity files ssh -G lists when the config names none.
var sshDefaultIdentities = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk", "~/.ssh/id_ed25519", "~/.ssh/id_ed25519_sk", "~/.ssh/id_xmss", "~/.ssh/id_dsa"}

// sshExpect is what the app should hold for each field, given what ssh resolved for r, written
// as the app's fields are written by appFields.
func (e *sshgEnv) sshExpect(r sshResolved) map[string]string {
	o := r.out
	host, port, user := o.get("hostname"), o.get("port"), o.get("user")
	alias := o.get("hostkeyalias")
	if alias == "" {
		alias = host
	}
	tokens := strings.NewReplacer("%%", "%", "%h", host, "%p", port, "%r", user, "%n", r.host, "%d", e.home, "%u", e.local, "%k", alias)
	// ssh's "~" and %d are the password database's home; the test's is e.home.
	home := func(s string) string { return strings.ReplaceAll(s, e.pwDir, e.home) }
	path := func(s string) string {
		if s == "~" || strings.HasPrefix(s, "~/") {
			s = e.home + s[1:]
		}
		if !filepath.IsAbs(s) {
			// Deliberate: the app takes relative paths from ~/.ssh, not its working folder.
			s = filepath.Join(e.home, ".ssh", s)
		}
		return s
	}
	list := func(v string) string {
		if strings.EqualFold(v, "none") {
			return ""
		}
		// ssh prints the list with spaces between, as the app's fields are written: a path
		// with a space in it reads the same either way.
		var out []string
		for _, f := range strings.Fields(home(v)) {
			out = append(out, f)
		}
		return strings.Join(out, " ")
	}
	w := map[string]string{"hostname": host, "port": port, "user": user}

	ids := o["identityfile"]
	if slices.Equal(ids, sshDefaultIdentities) {
		// Deliberate: the app offers the default keys it can use; security keys need hardware
		// it does not drive, and ssh itself no longer offers DSA or has XMSS by default.
		ids = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"}
	}
	var idPaths []string
	for _, id := range ids {
		if strings.EqualFold(id, "none") {
			continue
		}
		idPaths = append(idPaths, path(tokens.Replace(id)))
	}
	w["identityfile"] = strings.Join(idPaths, "\n")
	w["identitiesonly"] = o.get("identitiesonly")
	switch a := o.get("identityagent"); {
	case a == "":
	case strings.EqualFold(a, "none"):
		w["identityagent"] = "none"
	case a == "SSH_AUTH_SOCK":
		w["identityagent"] = os.Getenv("SSH_AUTH_SOCK")
		if w["identityagent"] == "" {
			w["identityagent"] = "none"
		}
	default:
		w["identityagent"] = path(home(a))
	}
	w["userknownhostsfile"] = list(o.get("userknownhostsfile"))
	w["globalknownhostsfile"] = list(o.get("globalknownhostsfile"))
	w["hostkeyalias"] = o.get("hostkeyalias")
	w["stricthostkeychecking"] = map[string]string{"true": "yes", "false": "no"}[o.get("stricthostkeychecking")]
	if w["stricthostkeychecking"] == "" {
		w["stricthostkeychecking"] = o.get("stricthostkeychecking")
	}
	w["hashknownhosts"] = o.get("hashknownhosts")
	switch ct := o.get("connecttimeout"); ct {
	case "none", "0":
		// Deliberate: the app always has a deadline for the handshake.
		w["connecttimeout"] = DefaultConnectTimeout.String()
	default:
		n, _ := strconv.Atoi(ct)
		w["connecttimeout"] = (time.Duration(n) * time.Second).String()
	}
	n, _ := strconv.Atoi(o.get("serveraliveinterval"))
	w["serveraliveinterval"] = (time.Duration(n) * time.Second).String()
	if n == 0 && o.get("serveraliveinterval-unset") == "yes" {
		// Deliberate: when the config says nothing, the app sends keepalives, its own default.
		w["serveraliveinterval"] = DefaultServerAliveInterval.String()
	}
	w["serveralivecountmax"] = o.get("serveralivecountmax")
	if pc := o.get("proxycommand"); pc != "" && !strings.EqualFold(pc, "none") {
		w["proxycommand"] = tokens.Replace(pc)
	} else {
		w["proxycommand"] = ""
	}
	return w
}

// appFields writes h's fields as sshExpect writes the expected ones.
func appFields(h *Host) map[string]string {
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	return map[string]string{
		"hostname":              h.HostName,
		"port":                  strconv.Itoa(h.Port),
		"user":                  h.User,
		"identityfile":          strings.Join(h.IdentityFiles, "\n"),
		"identitiesonly":        yn(h.IdentitiesOnly),
		"identityagent":         h.IdentityAgent,
		"userknownhostsfile":    strings.Join(h.KnownHostsFiles, " "),
		"globalknownhostsfile":  strings.Join(h.GlobalKnownHostsFiles, " "),
		"hostkeyalias":          h.HostKeyAlias,
		"stricthostkeychecking": h.StrictHostKeyChecking,
		"hashknownhosts":        yn(h.HashKnownHosts),
		"connecttimeout":        h.ConnectTimeout.String(),
		"serveraliveinterval":   h.ServerAliveInterval.String(),
		"serveralivecountmax":   strconv.Itoa(h.ServerAliveCountMax),
		"proxycommand":          h.ProxyCommand,
	}
}

// sshgResult is one destination compared: how many fields agree, of how many, and the
// differences.
type sshgResult struct {
	agree, total int
	diffs        []string
	complaint    string // ssh refused the config: nothing was compared
}

// compare resolves dest through file with the app and with ssh, and compares the two: every
// field of the host, the number of hops, and every field of each hop.
func (e *sshgEnv) compare(t testing.TB, file, dest string) sshgResult {
	t.Helper()
	var res sshgResult
	hops, target, complaint := e.sshChain(t, file, dest)
	if complaint != "" {
		res.complaint = complaint
		return res
	}
	cfg := Options{Host: dest, UserConfig: file, SystemConfig: None, Home: e.home}
	h, warnings, err := Resolve(cfg)
	// ssh read every line: a line the app left out is a difference, on top of the fields it
	// changed.
	res.total++
	if len(warnings) == 0 {
		res.agree++
	} else {
		res.diffs = append(res.diffs, fmt.Sprintf("app: warnings: %v", warnings))
	}
	check := func(where string, want, got map[string]string) {
		for _, f := range sshgFields {
			res.total++
			if got != nil && want[f] == got[f] {
				res.agree++
				continue
			}
			g := "(resolve failed)"
			if got != nil {
				g = strconv.Quote(got[f])
			}
			res.diffs = append(res.diffs, fmt.Sprintf("%s %s: ssh %q, app %s", where, f, want[f], g))
		}
	}
	var got map[string]string
	var appHops []*Host
	if err != nil {
		res.diffs = append(res.diffs, fmt.Sprintf("app: %v", err))
	} else {
		got, appHops = appFields(h), h.Jump
	}
	check("host", e.sshExpect(target), got)
	res.total++
	if err == nil && len(appHops) == len(hops) {
		res.agree++
	} else {
		res.diffs = append(res.diffs, fmt.Sprintf("hops: ssh %d, app %d", len(hops), len(appHops)))
	}
	for i, hop := range hops {
		var got map[string]string
		if i < len(appHops) {
			got = appFields(appHops[i])
		}
		check(fmt.Sprintf("hop %d (%s)", i+1, hop.host), e.sshExpect(hop), got)
	}
	return res
}

// sshgCorpus is the differential test's corpus: Host and Match blocks of every kind, negation,
// ? and *, first match wins, Include with globs and relative paths, = syntax, quoting, tokens,
// ProxyJump chains and none, user@host:port destinations, upper-case destinations.
var sshgCorpus = []sshgCase{
	{
		name: "Host patterns, negation, first match wins",
		config: `
Host web? !web9
  HostName %h.example.com
  User webuser
Host web*
  Port 2201
  User ignored
  IdentityFile ~/.ssh/web_%h
Host *.internal ??.lan
  User internal
  StrictHostKeyChecking accept-new
Host !bastion *
  ConnectTimeout 7
Host *
  ServerAliveCountMax 5
  HashKnownHosts yes
  IdentitiesOnly yes
`,
		dests: []string{"web1", "web9", "webx1", "db.internal", "ab.lan", "abc.lan", "bastion", "ops@web2:2222"},
	},
	{
		name: "upper-case destinations",
		config: `
Host FOO
  User upper
Host foo
  User lower
  HostName Foo.Example.COM
Match host foo.example.com
  Port 2022
Match originalhost foo
  HostKeyAlias orig
Host *
  IdentityFile ~/.ssh/id_%h_%n
`,
		dests: []string{"FOO", "foo", "Foo", "BAR"},
	},
	{
		name: "Match blocks of every kind",
		config: `
Match host ALPHA
  Port 1001
Host alpha
  HostName Beta.example
Match host beta.example
  User b1
Match host beta.example !host *.example
  Port 9
Match originalhost alpha
  HostKeyAlias oh
Match user b1
  IdentityAgent /agents/%r
Match user root,b*,!b2
  ConnectTimeout 12
Match localuser {{local}}
  IdentityFile /ids/%u
Match localuser nobody-here
  IdentityFile /ids/nobody
Match !host gamma,delta user zed
  ServerAliveInterval 40
Match canonical
  ServerAliveCountMax 9
Match all
  ServerAliveInterval 30
Match host=gamma
  User too-late
`,
		dests: []string{"alpha", "ALPHA", "gamma", "zed@alpha:44", "zed@other", "b2@x", "root@y"},
	},
	{
		name: "Match exec",
		config: `
Match exec "test %h = beta.example"
  User e1
Host alpha
  HostName beta.example
Match exec "test %h = beta.example"
  Port 2001
Match exec false
  Port 3
Match !exec false host x*
  Port 4
Match host nope exec "touch {{dir}}/ran-%n"
  Port 5
Match exec "test %n = x1 -a %p = 22 -a %r = {{local}} -a %u = {{local}} -a %d = {{home}}"
  IdentityFile ~/.ssh/exec_matched
Match exec "exit 7"
  User seven
`,
		dests: []string{"alpha", "x1", "nope", "q@y"},
	},
	{
		name: "Include with globs and relative paths",
		config: `
Host inc*
  Include {{dir}}/inc.d/*.conf
Host other
  Include {{dir}}/inc.d/none-*.conf
Include sub/rel*.conf
Host *
  User last
  Port 2
`,
		files: map[string]string{
			"{{dir}}/inc.d/10-a.conf":       "HostName a.example\nHost *\n  Port 1010\n",
			"{{dir}}/inc.d/20-b.conf":       "Port 2020\nUser from-b\nIdentityFile ~/.ssh/b\n",
			"{{home}}/.ssh/sub/rel1.conf":   "Host rel\n  User rel-user\n",
			"{{home}}/.ssh/sub/rel2.conf":   "Host rel other\n  HostName rel.example\n  Port 77\n",
			"{{home}}/.ssh/sub/other.conf":  "Host *\n  User never\n",
			"{{dir}}/inc.d/none-match.conf": "Host zz\n  User zz\n",
		},
		dests: []string{"inc1", "rel", "other", "zz", "plain"},
	},
	{
		name: "= syntax, quoting, comments, key case",
		config: `
# A comment.
HOST eq
  HostName=eq.example
  Port = 2022
  user  =quser
  IdentityFile "{{home}}/keys/with space"
  IdentityFile={{home}}/keys/second
  UserKnownHostsFile "~/.ssh/kh one" ~/.ssh/kh2
  GlobalKnownHostsFile '/etc/g one' /etc/g2
  ProxyCommand = ssh -W %h:%p "quoted arg" # the comment is the command's
	ServerAliveInterval	2m
Host "quoted"
  Port 2
  StrictHostKeyChecking no
Host tab	x
  HashKnownHosts=yes   # trailing comment
  IdentitiesOnly true
`,
		dests: []string{"eq", "quoted", "x", "tab"},
	},
	{
		name: "tokens",
		config: `
Host tok*
  HostName %h.example
  IdentityFile ~/.ssh/id_%h_%p_%r_%n_%u_%%
  IdentityFile %d/keys/%n
  UserKnownHostsFile %d/kh/%h-%p-%r-%n-%u
  ProxyCommand nc -X connect -x proxy:%p %h %p # %r %n %%
Host *
  User tokuser
  IdentityAgent ~/.ssh/agent-%h
`,
		dests: []string{"tok1", "me@tok2:2200"},
	},
	{
		name: "ProxyJump chains and none",
		config: `
Host j1
  HostName 10.0.0.9
  ProxyJump ops@bastion:2022,inner
Host bastion
  HostName bastion.example.com
  User ignored
  Port 9999
  ProxyJump outer
Host inner
  HostName inner.internal
  ProxyJump must-be-ignored
Host outer
  HostName outer.example.com
  IdentityFile ~/.ssh/outer_%h
Host j2
  ProxyJump none
  ProxyCommand nc %h %p
Host j3
  ProxyCommand nc %h %p
  ProxyJump bastion
Host j4
  ProxyJump ssh://u@outer:2200
Host j5
  ProxyJump pcfirst,pcsecond
Host pcfirst
  HostName first.example.com
  ProxyCommand nc %h %p
Host pcsecond
  ProxyCommand must-be-ignored
Host j6
  ProxyCommand none
  ProxyJump outer
`,
		dests: []string{"j1", "j2", "j3", "j4", "j5", "j6", "me@j1:23"},
	},
	{
		name: "keepalives, timeouts, host keys",
		config: `
Host zero
  ServerAliveInterval 0
  ServerAliveCountMax 0
Host units
  ServerAliveInterval 1m30s
  ConnectTimeout 1h
Host ct0
  ConnectTimeout 0
Host strict*
  StrictHostKeyChecking off
Host strictyes
  StrictHostKeyChecking yes
Host noknown
  UserKnownHostsFile none
  GlobalKnownHostsFile none
  HostKeyAlias none
Host alias
  HostKeyAlias Build-Alias
  IdentityFile ~/.ssh/k_%k
  IdentityAgent none
Host v6
  HostName FE80::1
Host v4
  HostName 10.0.0.1
Host noids
  IdentityFile none
Host dup
  IdentityFile ~/.ssh/same
  IdentityFile ~/.ssh/same
  IdentityFile ~/.ssh/other
`,
		dests: []string{"zero", "units", "ct0", "strictx", "strictyes", "noknown", "alias", "v6", "v4", "noids", "dup"},
	},
	{
		name: "final pass",
		config: `
Host alpha
  HostName Real.Example
Host real.example
  User hostline
Match final host real.example
  Port 99
Match final originalhost alpha
  HostKeyAlias fin
Match canonical
  IdentityAgent /canon
`,
		dests: []string{"alpha", "beta"},
	},
}

// TestSSHG holds the app's resolution against ssh -G's over the corpus. It logs the agreement
// count: destinations' fields (and their hops') that agree, of all compared.
func TestSSHG(t *testing.T) {
	e := newSSHGEnv(t)
	agree, total := 0, 0
	for _, c := range sshgCorpus {
		file := e.write(t, c)
		for _, dest := range c.dests {
			r := e.compare(t, file, dest)
			if r.complaint != "" {
				t.Errorf("%s, %s: ssh -G refused the corpus: %s", c.name, dest, r.complaint)
				continue
			}
			agree += r.agree
			total += r.total
			for _, d := range r.diffs {
				t.Errorf("%s, %s: %s", c.name, dest, d)
			}
		}
	}
	// 856 of 984 agreed before the package read ssh_config as ssh does.
	t.Logf("agreement: %d of %d fields", agree, total)
}
