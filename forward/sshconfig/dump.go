package sshconfig

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DumpConfig writes h as ssh -G prints a host's options: a lower-case keyword and its value on
// each line, for the keywords the app uses, so that the two can be compared line by line. Paths
// are written expanded (ssh -G writes IdentityFile as the config says it), times in whole
// seconds, StrictHostKeyChecking in ssh's words (true, false, ask, accept-new), and ProxyJump as
// the hops it resolved to, user@host:port each.
func (h *Host) DumpConfig() string {
	var b strings.Builder
	line := func(key, value string) {
		if value != "" {
			fmt.Fprintf(&b, "%s %s\n", key, value)
		}
	}
	yn := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	secs := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
	line("host", h.Alias)
	line("user", h.User)
	line("hostname", h.HostName)
	line("port", strconv.Itoa(h.Port))
	line("stricthostkeychecking", map[string]string{"yes": "true", "no": "false"}[h.StrictHostKeyChecking]+
		map[string]string{"ask": "ask", "accept-new": "accept-new"}[h.StrictHostKeyChecking])
	line("hashknownhosts", yn(h.HashKnownHosts))
	line("identitiesonly", yn(h.IdentitiesOnly))
	line("serveralivecountmax", strconv.Itoa(h.ServerAliveCountMax))
	line("serveraliveinterval", secs(h.ServerAliveInterval))
	line("hostkeyalias", h.HostKeyAlias)
	line("identityagent", h.IdentityAgent)
	for _, f := range h.IdentityFiles {
		line("identityfile", f)
	}
	line("globalknownhostsfile", strings.Join(h.GlobalKnownHostsFiles, " "))
	if len(h.KnownHostsFiles) == 0 {
		line("userknownhostsfile", None)
	} else {
		line("userknownhostsfile", strings.Join(h.KnownHostsFiles, " "))
	}
	line("connecttimeout", secs(h.ConnectTimeout))
	line("proxycommand", h.ProxyCommand)
	var hops []string
	for _, j := range h.Jump {
		hops = append(hops, hostSpec{User: j.User, Host: j.HostName, Port: j.Port}.String())
	}
	line("proxyjump", strings.Join(hops, ","))
	return b.String()
}
