package sshconfig

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/internal/termsafe"
)

// Host is one SSH host as ssh_config resolves it: where to connect, as whom, with which keys,
// how to check its key, and the hops on the way.
type Host struct {
	// Alias is the name as given ("buildbox"); HostName, Port and User where and as whom to
	// connect.
	Alias    string
	HostName string
	Port     int
	User     string

	// IdentityFiles are the private key files to offer, expanded: the configured ones, else
	// OpenSSH's default list. Files that do not exist are skipped when connecting.
	IdentityFiles []string
	// IdentitiesOnly restricts the agent's keys to those of IdentityFiles.
	IdentitiesOnly bool
	// IdentityAgent is the agent socket from ssh_config: "" when not set, [None] for no agent.
	IdentityAgent string

	// KnownHostsFiles are the user's known_hosts files (new keys go to the first);
	// GlobalKnownHostsFiles the system's. HostKeyAlias, when set, is the name the host's key
	// is looked up and saved under.
	KnownHostsFiles       []string
	GlobalKnownHostsFiles []string
	HostKeyAlias          string
	// StrictHostKeyChecking is "ask", "yes", "accept-new" or "no" ("off" reads as "no").
	StrictHostKeyChecking string
	// HashKnownHosts: keys added to known_hosts are saved under a hashed name.
	HashKnownHosts bool

	ConnectTimeout      time.Duration
	ServerAliveInterval time.Duration
	ServerAliveCountMax int

	// Jump are the ProxyJump hops, in the order they are dialed; each resolved through its own
	// Host block.
	Jump []*Host
	// ProxyCommand is the command whose stdin and stdout are the connection to the host, its
	// %-tokens expanded; "" when not set (or none). Only the first host of a chain has one: ssh
	// ignores the ProxyCommand of hosts it reaches through a hop.
	ProxyCommand string
}

// Addr is the address to dial: "host:port".
func (h *Host) Addr() string {
	return hostSpec{Host: h.HostName, Port: h.Port}.String()
}

// String names the host for messages: "host:port", after the alias when it differs.
func (h *Host) String() string {
	s := h.Addr()
	if h.Alias != h.HostName {
		s = h.Alias + " (" + s + ")"
	}
	return s
}

// Options says which host to resolve, through which files, with which overrides. Host is
// required; the zero value of every other field means ssh's own default.
type Options struct {
	// Host is the SSH host as ssh takes it on its command line: a Host alias of ssh_config
	// ("buildbox"), or [user@]host[:port]. A user or port given here wins over ssh_config's.
	Host string

	// UserConfig is the user's ssh_config file, ~/.ssh/config if empty; SystemConfig the
	// system-wide one, /etc/ssh/ssh_config if empty. [None] reads no file.
	UserConfig, SystemConfig string

	// KnownHosts is the user's known_hosts file, ~/.ssh/known_hosts (and known_hosts2) if
	// empty; [None] for none. A UserKnownHostsFile in ssh_config wins over it.
	KnownHosts string

	// Home is the folder "~" and %d stand for, and where OpenSSH's default identity files are
	// looked for; the user's home if empty.
	Home string

	// ConnectTimeout, ServerAliveInterval and ServerAliveCountMax, when not zero, win over
	// ssh_config's values, as ssh -o does. They take durations shorter than a second, which
	// ssh_config cannot.
	ConnectTimeout      time.Duration
	ServerAliveInterval time.Duration
	ServerAliveCountMax int
}

// Defaults for what neither Options nor ssh_config sets. ssh has no connect timeout of its own
// and no keepalives; a long-running app needs both.
const (
	DefaultConnectTimeout      = 15 * time.Second
	DefaultServerAliveInterval = 15 * time.Second
	DefaultServerAliveCountMax = 3
)

// None, as a file or socket, means no file or socket at all, as ssh -F none does.
const None = "none"

// Files are the ssh_config files o names, in the order they are read, "~" expanded. (Files they
// Include are read too, and not listed here.)
func (o Options) Files() []string {
	var out []string
	for _, f := range []struct{ path, def string }{
		{o.UserConfig, "~/.ssh/config"},
		{o.SystemConfig, "/etc/ssh/ssh_config"},
	} {
		switch f.path {
		case None:
		case "":
			out = append(out, expandTilde(f.def, o.home()))
		default:
			out = append(out, expandTilde(f.path, o.home()))
		}
	}
	return out
}

// home returns the folder "~" stands for.
func (o Options) home() string {
	if o.Home != "" {
		return o.Home
	}
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// maxJumps bounds ProxyJump chains, which may loop through their own Host blocks.
const maxJumps = 8

// defaultIdentities are OpenSSH's identity files, in ssh's order, tried when ssh_config names
// none. ssh also lists security keys (id_*_sk), which need hardware this package does not
// drive, id_xmss, which ssh is not built with by default, and id_dsa, whose signatures ssh no
// longer offers by default.
var defaultIdentities = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"}

// Resolve reads the ssh_config files o names and resolves o.Host through them, as ssh would,
// with o's overrides applied. It returns the lines of the files it could not read as warnings;
// they are left out, and the rest counts. Errors are [*ConfigError] when a value is wrong.
func Resolve(o Options) (*Host, []Warning, error) {
	r := &resolver{files: o.Files(), o: o, home: o.home(), localUser: localUser()}
	h, err := r.resolve(o.Host, 0, true)
	return h, r.warnings, err
}

type resolver struct {
	files     []string // the ssh_config files, the user's first
	o         Options
	home      string
	localUser string
	// runExec runs a Match exec command; nil is runMatchExec.
	runExec func(command string, limit time.Duration) (int, error)

	warnings []Warning
	warned   map[Warning]bool
}

// addWarnings keeps the warnings not kept yet: the hops of a chain read the same files.
func (r *resolver) addWarnings(ws []Warning) {
	if r.warned == nil {
		r.warned = map[Warning]bool{}
	}
	for _, w := range ws {
		if !r.warned[w] {
			r.warned[w] = true
			r.warnings = append(r.warnings, w)
		}
	}
}

// resolve resolves one host: the files' options for it, then each part of [Host] from them, in
// the order of its fields. withJumps is false for the hops after the first of a ProxyJump list:
// ssh dials those with the list given on its command line, which wins over their own ProxyJump.
func (r *resolver) resolve(spec string, depth int, withJumps bool) (*Host, error) {
	hs, err := parseHostSpec(spec)
	if err != nil {
		return nil, &ConfigError{Host: termsafe.Quote(spec), Reason: err.Error()}
	}
	o, hostName, warnings, err := r.evaluate(hs.Host, hs.User, hs.Port, !withJumps)
	r.addWarnings(warnings)
	if err != nil {
		return nil, err
	}
	h, err := r.destination(hs.Host, hostName, o)
	if err != nil {
		return nil, err
	}
	paths := pathExpander{alias: h.Alias, home: r.home, tokens: r.tokens(h)}
	for _, step := range []func(*Host, *sshOptions, pathExpander) error{r.identities, r.hostKeys, r.timers} {
		if err := step(h, o, paths); err != nil {
			return nil, err
		}
	}
	if withJumps {
		if err := r.hops(h, o, depth); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// bad is a [*ConfigError] about the value of key for host.
func bad(host, key, format string, args ...any) error {
	return &ConfigError{Host: host, Key: key, Reason: fmt.Sprintf(format, args...)}
}

// destination is where to connect and as whom: HostName, Port, User, and the HostKeyAlias the
// host's key goes by.
func (r *resolver) destination(alias, hostName string, o *sshOptions) (*Host, error) {
	h := &Host{Alias: alias, HostName: hostName, Port: 22}
	if !validHostName(h.HostName) {
		return nil, bad(alias, "HostName", "%s is not a host name", termsafe.Quote(h.HostName))
	}
	if v := o.get("port"); v != "" {
		p, err := parsePort(v)
		if err != nil {
			return nil, bad(alias, "Port", "%v", err)
		}
		h.Port = p
	}
	h.User = o.get("user")
	if h.User == "" {
		h.User = r.localUser
	}
	// ssh looks the alias up in lower case, as it does the host name.
	h.HostKeyAlias = strings.ToLower(o.get("hostkeyalias"))
	return h, nil
}

// pathExpander expands the paths of one host's options as ssh does: %-tokens, then "~".
type pathExpander struct {
	alias  string // the host, for errors
	home   string
	tokens map[byte]string
}

// expand expands v, the value of key.
func (p pathExpander) expand(key, v string) (string, error) {
	v, err := expandTokens(v, p.tokens)
	if err != nil {
		return "", bad(p.alias, key, "%v", err)
	}
	v = expandTilde(v, p.home)
	if !filepath.IsAbs(v) {
		// ssh takes relative paths from the current folder; a long-running app has no
		// meaningful one, so they are taken from ~/.ssh, as Include does.
		v = filepath.Join(p.home, ".ssh", v)
	}
	return v, nil
}

// expandAll expands the values of key, leaving out "none".
func (p pathExpander) expandAll(key string, vs []string) ([]string, error) {
	var out []string
	for _, v := range vs {
		if strings.EqualFold(v, None) {
			continue
		}
		x, err := p.expand(key, v)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// identities are the keys to offer: IdentityFile (ssh's defaults when none is set),
// IdentitiesOnly and IdentityAgent.
func (r *resolver) identities(h *Host, o *sshOptions, paths pathExpander) (err error) {
	ids := o.identityFiles
	if len(ids) == 0 {
		ids = defaultIdentities
	}
	if h.IdentityFiles, err = paths.expandAll("IdentityFile", ids); err != nil {
		return err
	}
	if h.IdentitiesOnly, err = yesNo(o.get("identitiesonly"), false); err != nil {
		return bad(h.Alias, "IdentitiesOnly", "%v", err)
	}
	if v := o.get("identityagent"); v != "" {
		switch {
		case strings.EqualFold(v, None):
			h.IdentityAgent = None
		case v == "SSH_AUTH_SOCK":
			h.IdentityAgent = os.Getenv("SSH_AUTH_SOCK")
		case strings.HasPrefix(v, "$"):
			h.IdentityAgent = os.Getenv(strings.Trim(v[1:], "{}"))
		default:
			if h.IdentityAgent, err = paths.expand("IdentityAgent", v); err != nil {
				return err
			}
		}
		if h.IdentityAgent == "" {
			h.IdentityAgent = None
		}
	}
	return nil
}

// hostKeys is how the host's key is checked: the known_hosts files, StrictHostKeyChecking and
// HashKnownHosts.
func (r *resolver) hostKeys(h *Host, o *sshOptions, paths pathExpander) (err error) {
	user, userSet := o.vals["userknownhostsfile"]
	switch {
	case userSet:
		if h.KnownHostsFiles, err = paths.expandAll("UserKnownHostsFile", user); err != nil {
			return err
		}
	case r.o.KnownHosts != "" && r.o.KnownHosts != None:
		h.KnownHostsFiles = []string{expandTilde(r.o.KnownHosts, r.home)}
	case r.o.KnownHosts == "":
		h.KnownHostsFiles = []string{filepath.Join(r.home, ".ssh", "known_hosts"), filepath.Join(r.home, ".ssh", "known_hosts2")}
	}
	global, globalSet := o.vals["globalknownhostsfile"]
	if !globalSet {
		global = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	if h.GlobalKnownHostsFiles, err = paths.expandAll("GlobalKnownHostsFile", global); err != nil {
		return err
	}
	switch v := strings.ToLower(o.get("stricthostkeychecking")); v {
	case "", "ask":
		h.StrictHostKeyChecking = "ask"
	case "yes", "accept-new", "no":
		h.StrictHostKeyChecking = v
	case "true":
		h.StrictHostKeyChecking = "yes"
	case "off", "false":
		h.StrictHostKeyChecking = "no"
	default:
		return bad(h.Alias, "StrictHostKeyChecking", "%s is not yes, accept-new, no, off or ask", termsafe.Quote(v))
	}
	if h.HashKnownHosts, err = yesNo(o.get("hashknownhosts"), false); err != nil {
		return bad(h.Alias, "HashKnownHosts", "%v", err)
	}
	return nil
}

// timers are ConnectTimeout and the keepalives: Options win, then ssh_config, then the defaults.
// ConnectTimeout 0 (no time limit for ssh) keeps the default: the app always has one.
func (r *resolver) timers(h *Host, o *sshOptions, _ pathExpander) (err error) {
	if h.ConnectTimeout, err = seconds(o.get("connecttimeout")); err != nil {
		return bad(h.Alias, "ConnectTimeout", "%v", err)
	}
	h.ConnectTimeout = firstPositive(r.o.ConnectTimeout, h.ConnectTimeout, DefaultConnectTimeout)
	h.ServerAliveInterval = DefaultServerAliveInterval
	if v := o.get("serveraliveinterval"); v != "" {
		// 0 turns keepalives off, as in ssh.
		if h.ServerAliveInterval, err = seconds(v); err != nil {
			return bad(h.Alias, "ServerAliveInterval", "%v", err)
		}
	}
	if r.o.ServerAliveInterval > 0 {
		h.ServerAliveInterval = r.o.ServerAliveInterval
	}
	h.ServerAliveCountMax = DefaultServerAliveCountMax
	if v := o.get("serveralivecountmax"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return bad(h.Alias, "ServerAliveCountMax", "%s is not a count", termsafe.Quote(v))
		}
		h.ServerAliveCountMax = n
	}
	if r.o.ServerAliveCountMax > 0 {
		h.ServerAliveCountMax = r.o.ServerAliveCountMax
	}
	return nil
}

// hops are the way to the host: ProxyJump or ProxyCommand, whichever the files gave first.
func (r *resolver) hops(h *Host, o *sshOptions, depth int) (err error) {
	if o.proxySet && !strings.EqualFold(o.proxyCommand, None) {
		if h.ProxyCommand, err = r.proxyCommand(h, o.proxyCommand); err != nil {
			return bad(h.Alias, "ProxyCommand", "%v", err)
		}
		return nil
	}
	if !o.jumpSet || strings.EqualFold(o.jump, None) {
		return nil
	}
	if depth >= maxJumps {
		return bad(h.Alias, "ProxyJump", "more than %d hops (a loop?)", maxJumps)
	}
	for i, hop := range strings.Split(o.jump, ",") {
		// The first hop is dialed as ssh would dial it, with its own ProxyJump; the next ones
		// through the hop before them.
		j, err := r.resolve(strings.TrimSpace(hop), depth+1, i == 0)
		if err != nil {
			return err
		}
		if i == 0 {
			h.Jump = append(h.Jump, j.Jump...)
			j.Jump = nil
		}
		h.Jump = append(h.Jump, j)
	}
	return nil
}

// proxyCommand expands the tokens ssh expands in a ProxyCommand: %h %n %p %r and %%. The user
// name goes into a command the shell reads, so one with characters the shell would act on is
// refused, as ssh refuses it on its command line; the host names were checked already.
func (r *resolver) proxyCommand(h *Host, command string) (string, error) {
	all := r.tokens(h)
	vals := map[byte]string{'h': all['h'], 'n': all['n'], 'p': all['p'], 'r': all['r']}
	if strings.Contains(strings.ReplaceAll(command, "%%", ""), "%r") && !shellSafeUser(h.User) {
		return "", fmt.Errorf("user %s has characters the shell would act on, and %%r puts it in the command", termsafe.Quote(h.User))
	}
	return expandTokens(command, vals)
}

// shellSafeUser says whether a user name can go into a shell command as it is: OpenSSH's
// valid_ruser, with '$', '\' and white space refused too.
func shellSafeUser(u string) bool {
	return u != "" && u[0] != '-' && !strings.ContainsAny(u, "'`\"$\\;&<>|(){} \t\n")
}

// tokens are the values of ssh_config's %-tokens for h.
func (r *resolver) tokens(h *Host) map[byte]string {
	long, _ := os.Hostname()
	short, _, _ := strings.Cut(long, ".")
	k := h.HostKeyAlias
	if k == "" {
		k = h.HostName
	}
	return map[byte]string{
		'd': r.home,
		'h': h.HostName,
		'i': strconv.Itoa(os.Getuid()),
		'k': k,
		'L': short,
		'l': long,
		'n': h.Alias,
		'p': strconv.Itoa(h.Port),
		'r': h.User,
		'u': r.localUser,
	}
}

func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

// yesNo parses an ssh_config yes/no value; "" is def.
func yesNo(v string, def bool) (bool, error) {
	switch strings.ToLower(v) {
	case "":
		return def, nil
	case "yes", "true":
		return true, nil
	case "no", "false":
		return false, nil
	}
	return false, fmt.Errorf("%s is not yes or no", termsafe.Quote(v))
}

// seconds parses a time in seconds as ssh_config writes it: "30", or with units as "1m30s"
// (s, m, h, d, w). "" is 0.
func seconds(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, nil
	}
	var total time.Duration
	rest := strings.ToLower(v)
	for rest != "" {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i > 9 {
			return 0, fmt.Errorf("%s is not a time", termsafe.Quote(v))
		}
		n, _ := strconv.Atoi(rest[:i])
		unit := time.Second
		if i < len(rest) {
			switch rest[i] {
			case 's':
			case 'm':
				unit = time.Minute
			case 'h':
				unit = time.Hour
			case 'd':
				unit = 24 * time.Hour
			case 'w':
				unit = 7 * 24 * time.Hour
			default:
				return 0, fmt.Errorf("%s is not a time", termsafe.Quote(v))
			}
			i++
		}
		total += time.Duration(n) * unit
		rest = rest[i:]
	}
	return total, nil
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}
