package forward

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
	return joinHostPort(h.HostName, h.Port)
}

// String names the host for messages: "host:port", after the alias when it differs.
func (h *Host) String() string {
	s := h.Addr()
	if h.Alias != h.HostName {
		s = h.Alias + " (" + s + ")"
	}
	return s
}

func joinHostPort(host string, port int) string {
	return hostSpec{Host: host, Port: port}.String()
}

// configFiles are the ssh_config files c names, in the order they are read, "~" expanded.
// (Files they Include are read too, and not listed here.)
func (c Config) configFiles() []string {
	var out []string
	for _, f := range []struct{ path, def string }{
		{c.UserConfig, "~/.ssh/config"},
		{c.SystemConfig, "/etc/ssh/ssh_config"},
	} {
		switch f.path {
		case None:
		case "":
			out = append(out, expandTilde(f.def, c.home()))
		default:
			out = append(out, expandTilde(f.path, c.home()))
		}
	}
	return out
}

// maxJumps bounds ProxyJump chains, which may loop through their own Host blocks.
const maxJumps = 8

// defaultIdentities are OpenSSH's identity files, in ssh's order, tried when ssh_config names
// none. ssh also lists security keys (id_*_sk), which need hardware this package does not
// drive, id_xmss, which ssh is not built with by default, and id_dsa, whose signatures ssh no
// longer offers by default.
var defaultIdentities = []string{"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519"}

// Resolve reads the ssh_config files c names and resolves c.Host through them, as ssh would,
// with c's overrides applied. It returns the lines of the files it could not read as warnings;
// they are left out, and the rest counts. Errors are [*ConfigError] when a value is wrong.
func (c Config) Resolve() (*Host, []Warning, error) {
	r := &resolver{files: c.configFiles(), c: c, home: c.home(), localUser: localUser()}
	h, err := r.resolve(c.Host, 0, true)
	return h, r.warnings, err
}

type resolver struct {
	files     []string // the ssh_config files, the user's first
	c         Config
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

// resolve resolves one host. withJumps is false for the hops after the first of a ProxyJump
// list: ssh dials those with the list given on its command line, which wins over their own
// ProxyJump.
func (r *resolver) resolve(spec string, depth int, withJumps bool) (*Host, error) {
	hs, err := parseHostSpec(spec)
	if err != nil {
		return nil, &ConfigError{Host: termsafe.Quote(spec), Reason: err.Error()}
	}
	alias := hs.Host
	bad := func(key, format string, args ...any) error {
		return &ConfigError{Host: alias, Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	o, hostName, warnings, err := r.evaluate(alias, hs.User, hs.Port, !withJumps)
	r.addWarnings(warnings)
	if err != nil {
		return nil, err
	}
	get := o.get

	h := &Host{Alias: alias, HostName: hostName}
	if !validHostName(h.HostName) {
		return nil, bad("HostName", "%s is not a host name", termsafe.Quote(h.HostName))
	}
	h.Port = 22
	if v := get("port"); v != "" {
		p, err := parsePort(v)
		if err != nil {
			return nil, bad("Port", "%v", err)
		}
		h.Port = p
	}
	h.User = get("user")
	if h.User == "" {
		h.User = r.localUser
	}
	// ssh looks the alias up in lower case, as it does the host name.
	h.HostKeyAlias = strings.ToLower(get("hostkeyalias"))

	tokens := r.tokens(h)
	expandPath := func(key, v string) (string, error) {
		v, err := expandTokens(v, tokens)
		if err != nil {
			return "", bad(key, "%v", err)
		}
		v = expandTilde(v, r.home)
		if !filepath.IsAbs(v) {
			// ssh takes relative paths from the current folder; a long-running app has no
			// meaningful one, so they are taken from ~/.ssh, as Include does.
			v = filepath.Join(r.home, ".ssh", v)
		}
		return v, nil
	}

	// Identities.
	ids := o.identityFiles
	if len(ids) == 0 {
		ids = defaultIdentities
	}
	for _, id := range ids {
		if strings.EqualFold(id, None) {
			continue
		}
		p, err := expandPath("IdentityFile", id)
		if err != nil {
			return nil, err
		}
		h.IdentityFiles = append(h.IdentityFiles, p)
	}
	if h.IdentitiesOnly, err = yesNo(get("identitiesonly"), false); err != nil {
		return nil, bad("IdentitiesOnly", "%v", err)
	}
	if v := get("identityagent"); v != "" {
		switch {
		case strings.EqualFold(v, None):
			h.IdentityAgent = None
		case v == "SSH_AUTH_SOCK":
			h.IdentityAgent = os.Getenv("SSH_AUTH_SOCK")
		case strings.HasPrefix(v, "$"):
			h.IdentityAgent = os.Getenv(strings.Trim(v[1:], "{}"))
		default:
			if h.IdentityAgent, err = expandPath("IdentityAgent", v); err != nil {
				return nil, err
			}
		}
		if h.IdentityAgent == "" {
			h.IdentityAgent = None
		}
	}

	// Host keys.
	user, userSet := o.vals["userknownhostsfile"]
	switch {
	case userSet:
		for _, f := range user {
			if strings.EqualFold(f, None) {
				continue
			}
			p, err := expandPath("UserKnownHostsFile", f)
			if err != nil {
				return nil, err
			}
			h.KnownHostsFiles = append(h.KnownHostsFiles, p)
		}
	case r.c.KnownHosts != "" && r.c.KnownHosts != None:
		h.KnownHostsFiles = []string{expandTilde(r.c.KnownHosts, r.home)}
	case r.c.KnownHosts == "":
		h.KnownHostsFiles = []string{filepath.Join(r.home, ".ssh", "known_hosts"), filepath.Join(r.home, ".ssh", "known_hosts2")}
	}
	global, globalSet := o.vals["globalknownhostsfile"]
	if !globalSet {
		global = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	for _, f := range global {
		if strings.EqualFold(f, None) {
			continue
		}
		p, err := expandPath("GlobalKnownHostsFile", f)
		if err != nil {
			return nil, err
		}
		h.GlobalKnownHostsFiles = append(h.GlobalKnownHostsFiles, p)
	}
	switch v := strings.ToLower(get("stricthostkeychecking")); v {
	case "", "ask":
		h.StrictHostKeyChecking = "ask"
	case "yes", "accept-new", "no":
		h.StrictHostKeyChecking = v
	case "true":
		h.StrictHostKeyChecking = "yes"
	case "off", "false":
		h.StrictHostKeyChecking = "no"
	default:
		return nil, bad("StrictHostKeyChecking", "%s is not yes, accept-new, no, off or ask", termsafe.Quote(v))
	}
	if h.HashKnownHosts, err = yesNo(get("hashknownhosts"), false); err != nil {
		return nil, bad("HashKnownHosts", "%v", err)
	}

	// Timers: Config wins, then ssh_config, then the defaults. ConnectTimeout 0 (no time limit
	// for ssh) keeps the default: the app always has one.
	if h.ConnectTimeout, err = seconds(get("connecttimeout")); err != nil {
		return nil, bad("ConnectTimeout", "%v", err)
	}
	h.ConnectTimeout = firstPositive(r.c.ConnectTimeout, h.ConnectTimeout, DefaultConnectTimeout)
	h.ServerAliveInterval = DefaultServerAliveInterval
	if v := get("serveraliveinterval"); v != "" {
		// 0 turns keepalives off, as in ssh.
		if h.ServerAliveInterval, err = seconds(v); err != nil {
			return nil, bad("ServerAliveInterval", "%v", err)
		}
	}
	if r.c.ServerAliveInterval > 0 {
		h.ServerAliveInterval = r.c.ServerAliveInterval
	}
	h.ServerAliveCountMax = DefaultServerAliveCountMax
	if v := get("serveralivecountmax"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return nil, bad("ServerAliveCountMax", "%s is not a count", termsafe.Quote(v))
		}
		h.ServerAliveCountMax = n
	}
	if r.c.ServerAliveCountMax > 0 {
		h.ServerAliveCountMax = r.c.ServerAliveCountMax
	}

	// Hops: ProxyJump or ProxyCommand, whichever the files gave first.
	if !withJumps {
		return h, nil
	}
	if o.proxySet && !strings.EqualFold(o.proxyCommand, None) {
		if h.ProxyCommand, err = r.proxyCommand(h, o.proxyCommand); err != nil {
			return nil, bad("ProxyCommand", "%v", err)
		}
		return h, nil
	}
	if !o.jumpSet || strings.EqualFold(o.jump, None) {
		return h, nil
	}
	if depth >= maxJumps {
		return nil, bad("ProxyJump", "more than %d hops (a loop?)", maxJumps)
	}
	for i, hop := range strings.Split(o.jump, ",") {
		// The first hop is dialed as ssh would dial it, with its own ProxyJump; the next ones
		// through the hop before them.
		j, err := r.resolve(strings.TrimSpace(hop), depth+1, i == 0)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			h.Jump = append(h.Jump, j.Jump...)
			j.Jump = nil
		}
		h.Jump = append(h.Jump, j)
	}
	return h, nil
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
