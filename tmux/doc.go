// Package tmux is a client of tmux's control mode (tmux -C) over any byte stream: the pipes of a
// local tmux process, or an SSH session running tmux on another host. krad-ade runs one tmux server
// per host on its own socket (tmux -L krad-ade on this computer, tmux -S ~/.krad-ade/tmux/krad-ade
// on SSH hosts, or tmux -L krad-ade on a host an earlier version prepared, while that server
// holds the environment), one session per environment, one window per terminal, and drives them
// all through this package.
//
// # Use
//
// [Start] runs a local tmux and attaches to a session, creating it if need be:
//
//	c, err := tmux.Start(ctx, tmux.StartOptions{
//		SocketName:     "krad-ade",
//		Session:        "main",
//		OnNotification: func(c *tmux.Client, n tmux.Notification) { … },
//	})
//	defer c.Close()
//	out, err := c.Command(ctx, "new-window", "-d", "-P", "-F", "#{window_id} #{pane_id}", "--", "claude")
//	// out is []string{"@3 %7"}
//
// Over any other stream, such as an SSH session, run tmux with the command line of
// [StartOptions.Args] (each argument quoted for the shell there), and [Attach] does the same:
// tmux.Attach(ctx, rw, onNote) waits for tmux's answer to that command line.
//
// [Client.Command] takes a command as separate arguments, as exec.Command does, and quotes each
// with [Quote], so that whatever text it carries (a prompt for an agent, a path with spaces, a
// string with ;, $, # or newlines in it) arrives at the command as it was: nothing is expanded and
// nothing starts another command. It returns the reply's lines, or a [*CommandError] with tmux's
// own. Many goroutines may call it at once; each gets its own reply. Some arguments are formats
// to the command itself (a window's name, its folder): text given there goes through
// [FormatLiteral] too, or #(…) in it would run a command. FormatLiteral's documentation lists
// which arguments those are.
//
// Notifications (a pane's output, windows opening and closing, subscriptions' values, %exit) go to
// the callback given to Start, Attach or New, with the client that read them, one at a time and
// in order, as values of the types listed under [Notification]. A line the package does not know arrives as [Unknown]: newer tmux versions
// add notifications, and they are not errors.
//
// [Client.Done] is closed when the client ends; [Client.Err] says why. A dropped SSH connection,
// tmux killed, and kill-server from elsewhere all end it; the server and its windows may well
// outlive it (tmux keeps them running), so reconnecting is running Start or Attach again.
//
// # The wire
//
// The client writes one command a line. tmux answers each line, in order, with a block:
//
//	%begin 1363006971 2 1
//	0: ksh* (1 panes) [80x24] [layout b25f,80x24,0,0,2] @2 (active)
//	%end 1363006971 2 1
//
// or with %error in place of %end when the command failed. The three fields are a time, a number
// and flags, and the closing line repeats them; everything in between is output, even a line that
// starts with '%' and looks like a notification. Flags 1 marks the answer to a line the client
// sent, flags 0 a command tmux ran itself (the new-session of the command line, hooks): those come
// as [UnsolicitedReply] notifications and are never taken for a command's reply.
//
// Outside blocks every line is a notification: '%', a kind, fields separated by spaces. In %output
// and %extended-output tmux writes each byte below 0x20 and the backslash as a backslash and three
// octal digits (\015\012 for CRLF, \134 for \); the package undoes that and gives the bytes as
// they were. Other bytes, invalid UTF-8 among them, come as they are. %exit is the last line.
//
// Notifications do not wait for replies: a %window-add for a new-window may come after its reply,
// and after replies to later commands; %subscription-changed comes at most once a second.
//
// # What it guards against
//
// It reads a stream that may come from another host, so it assumes nothing of it: any bytes give
// replies, notifications or [Unknown] lines, never a panic. Lines are limited to [MaxLine] and
// replies to [MaxReply], so a stream cannot make it grow without bound; past them the client ends
// with [ErrTooLong]. Its error messages quote at most [MaxErrorText] bytes of the stream's text,
// escaped, and a number field larger than tmux itself can hold (a window index, an age) makes the
// notification [Unknown] rather than wrap into a negative number. A reply is only ever given to the command it answers: if tmux answers when no
// command waits, the replies are out of step and the client ends with [ErrProtocol] rather than
// give later replies to the wrong callers. A stream that stays open and answers nothing (a
// stopped server, a program that answered its first reply and then fell silent, or one that
// streams pane output and never replies) would hold every command for good: [Client.Watch] ends
// such a client with [ErrNoAnswer]. It does not authenticate the stream: whoever controls
// it controls what the client reads, as whoever controls the tmux server controls its windows.
package tmux
