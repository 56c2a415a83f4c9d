package tmux

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseNotification(t *testing.T) {
	for _, tt := range []struct {
		line string
		want Notification
	}{
		{`%output %0 \033[?2004hroot@vm:/tmp# `, Output{Pane: 0, Data: []byte("\x1b[?2004hroot@vm:/tmp# ")}},
		{`%output %12 a\011b\134n`, Output{Pane: 12, Data: []byte("a\tb\\n")}},
		{`%output %3 `, Output{Pane: 3, Data: []byte{}}},
		{"%output %3 caf\xc3\xa9 \xff", Output{Pane: 3, Data: []byte("caf\xc3\xa9 \xff")}},
		{`%extended-output %4 1500 : hi\015\012`, Output{Pane: 4, Data: []byte("hi\r\n"), Age: 1500 * time.Millisecond}},
		{`%extended-output %4 0 future fields : a : b`, Output{Pane: 4, Data: []byte("a : b")}},
		{`%pause %2`, Pause{Pane: 2}},
		{`%continue %2`, Continue{Pane: 2}},
		{`%pane-mode-changed %0`, PaneModeChanged{Pane: 0}},
		{`%window-add @1`, WindowAdd{Window: 1}},
		{`%unlinked-window-add @9`, WindowAdd{Window: 9, Unlinked: true}},
		{`%window-close @1`, WindowClose{Window: 1}},
		{`%unlinked-window-close @9`, WindowClose{Window: 9, Unlinked: true}},
		{`%window-renamed @0 my window  name`, WindowRenamed{Window: 0, Name: "my window  name"}},
		{`%unlinked-window-renamed @5 x`, WindowRenamed{Window: 5, Name: "x", Unlinked: true}},
		{`%window-pane-changed @1 %4`, WindowPaneChanged{Window: 1, Pane: 4}},
		{`%layout-change @0 b25f,80x24,0,0,2 b25f,80x24,0,0,2 *`, LayoutChange{Window: 0, Layout: "b25f,80x24,0,0,2", VisibleLayout: "b25f,80x24,0,0,2", Flags: "*"}},
		{`%layout-change @0 b25f,80x24,0,0,2 b25f,80x24,0,0,2 `, LayoutChange{Window: 0, Layout: "b25f,80x24,0,0,2", VisibleLayout: "b25f,80x24,0,0,2"}},
		{`%layout-change @0 b25f,80x24,0,0,2`, LayoutChange{Window: 0, Layout: "b25f,80x24,0,0,2"}},
		{`%session-changed $0 main env`, SessionChanged{Session: 0, Name: "main env"}},
		{`%session-renamed $2 new name`, SessionRenamed{Session: 2, Name: "new name"}},
		{`%session-renamed old-style`, SessionRenamed{Session: -1, Name: "old-style"}},
		{`%sessions-changed`, SessionsChanged{}},
		{`%session-window-changed $0 @3`, SessionWindowChanged{Session: 0, Window: 3}},
		{`%client-session-changed /dev/pts/3 $1 other`, ClientSessionChanged{Client: "/dev/pts/3", Session: 1, Name: "other"}},
		{`%client-detached client-4811`, ClientDetached{Client: "client-4811"}},
		{`%subscription-changed dead $0 @1 1 %1 : 1 3`, SubscriptionChanged{Name: "dead", Session: 0, Window: 1, WindowIndex: 1, Pane: 1, Value: "1 3"}},
		{`%subscription-changed s $0 - - - : main`, SubscriptionChanged{Name: "s", Session: 0, Window: -1, WindowIndex: -1, Pane: -1, Value: "main"}},
		{`%subscription-changed w $0 @2 4 - : `, SubscriptionChanged{Name: "w", Session: 0, Window: 2, WindowIndex: 4, Pane: -1}},
		{`%subscription-changed w $0 @2 4 - extra more : a : b `, SubscriptionChanged{Name: "w", Session: 0, Window: 2, WindowIndex: 4, Pane: -1, Value: "a : b "}},
		{`%paste-buffer-changed buffer0`, PasteBufferChanged{Name: "buffer0"}},
		{`%paste-buffer-deleted buffer0`, PasteBufferDeleted{Name: "buffer0"}},
		{`%config-error /etc/tmux.conf:3: unknown command: x`, ConfigError{Message: "/etc/tmux.conf:3: unknown command: x"}},
		{`%exit`, Exit{}},
		{`%exit server exited unexpectedly`, Exit{Reason: "server exited unexpectedly"}},
		{`%message hello`, Unknown{Line: "%message hello"}},
		{`%`, Unknown{Line: "%"}},
	} {
		got := parseNotification([]byte(tt.line))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseNotification(%q):\ngot  %#v\nwant %#v", tt.line, got, tt.want)
		}
	}
}

// Known kinds with bad fields, and lines that are not notifications at all, are Unknown with an
// error wrapping ErrMalformed.
func TestParseNotificationMalformed(t *testing.T) {
	for _, line := range []string{
		``,
		`plain text`,
		`%output`,
		`%output 0 data`,
		`%output %x data`,
		`%output %-1 data`,
		`%output %99999999999 data`,
		`%output %1 bad\9escape`,
		`%output %1 short\01`,
		`%output %1 trailing\`,
		`%output %1 \400`,
		`%extended-output %1 x : data`,
		`%extended-output %1 10 data`,
		`%window-add`,
		`%window-add 1`,
		`%window-add @1 extra`,
		`%window-close $1`,
		`%session-changed @1 name`,
		`%sessions-changed now`,
		`%subscription-changed name $0 @1 1 %1 no colon`,
		`%subscription-changed name $0 @1 x %1 : v`,
		`%subscription-changed name`,
		`%pause`,
		`%layout-change`,
		// Numbers past what tmux can hold are refused, not wrapped into negative ones.
		`%subscription-changed name $0 @1 9223372036854775808 %1 : v`,
		`%subscription-changed name $0 @1 2147483648 %1 : v`,
		`%extended-output %1 18446744073709551615 : data`,
		`%extended-output %1 4294967296 : data`,
	} {
		got := parseNotification([]byte(line))
		u, ok := got.(Unknown)
		if !ok || !errors.Is(u.Err, ErrMalformed) || u.Line != line {
			t.Errorf("parseNotification(%q) = %#v, want Unknown with the line and an error wrapping ErrMalformed", line, got)
		}
	}
}

// A field, a reason or a command's lines from the other side of the stream reach an error
// message cut: the stream may be another host's, and the message goes to logs and to people.
func TestErrorsQuoteLittleOfTheStream(t *testing.T) {
	long := strings.Repeat("\x01x", 1<<20)
	for name, msg := range map[string]string{
		"a failed command":   (&CommandError{Lines: []string{long, long}}).Error(),
		"many short lines":   (&CommandError{Lines: strings.Split(long, "x")}).Error(),
		"%exit":              (&ExitError{Reason: long}).Error(),
		"a bad window":       parseNotification([]byte("%window-add @" + long)).(Unknown).Err.Error(),
		"a bad number field": parseNotification([]byte("%extended-output %1 " + long + " : x")).(Unknown).Err.Error(),
	} {
		if len(msg) > 4*MaxErrorText+100 {
			t.Errorf("%s: the error message is %d bytes, want at most about %d", name, len(msg), 4*MaxErrorText)
		}
		if strings.ContainsRune(msg, 1) {
			t.Errorf("%s: the error message holds a raw control character", name)
		}
	}
}

func TestUnescape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, ``},
		{`plain`, `plain`},
		{`\134`, `\`},
		{`\000\001\037`, "\x00\x01\x1f"},
		{`\033[1m`, "\x1b[1m"},
		{`\015\012`, "\r\n"},
		{`\377`, "\xff"},
		{`a\134\134b`, `a\\b`},
		{"\xc3\xa9\x7f", "\xc3\xa9\x7f"},
	} {
		got, err := unescape(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("unescape(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{`\`, `\1`, `\12`, `\8aa`, `\400`, `\7`, `x\01`} {
		if got, err := unescape(in); err == nil {
			t.Errorf("unescape(%q) = %q, want an error", in, got)
		}
	}
}

func TestIDs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"%0", "%0", true}, {"%42", "%42", true}, {"@7", "@7", true}, {"$3", "$3", true},
		{"%", "", false}, {"%+1", "", false}, {"%-1", "", false}, {"% 1", "", false}, {"%1x", "", false},
		{"@4294967296", "", false}, {"", "", false}, {"1", "", false},
	} {
		var got string
		var err error
		switch {
		case tt.in == "" || tt.in[0] == '%' || tt.in[0] == '1':
			var id PaneID
			id, err = ParsePaneID(tt.in)
			got = id.String()
		case tt.in[0] == '@':
			var id WindowID
			id, err = ParseWindowID(tt.in)
			got = id.String()
		default:
			var id SessionID
			id, err = ParseSessionID(tt.in)
			got = id.String()
		}
		if tt.ok && (err != nil || got != tt.want) {
			t.Errorf("parse %q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if !tt.ok && !errors.Is(err, ErrMalformed) {
			t.Errorf("parse %q: got error %v, want one wrapping ErrMalformed", tt.in, err)
		}
	}
	if got := PaneID(-1).String(); got != "-" {
		t.Errorf("PaneID(-1).String() = %q, want -", got)
	}
}
