package forward

import (
	"errors"
	"testing"
	"time"

	"github.com/krad-ade/krad/forward/knownhosts"
	"github.com/krad-ade/krad/forward/sshconfig"
)

func TestStatusString(t *testing.T) {
	lost := errors.New("connection lost: EOF")
	for _, tc := range []struct {
		s    Status
		want string
	}{
		{Status{State: Connecting}, "connecting"},
		{Status{State: Connecting, Err: lost}, "connecting (after: connection lost: EOF)"},
		{Status{State: Connected, Addr: "127.0.0.1:41877"}, "connected: 127.0.0.1:41877 on the host"},
		{Status{State: Retrying, RetryIn: 8123 * time.Millisecond, Err: lost}, "retrying in 8s: connection lost: EOF"},
		{Status{State: Retrying, RetryIn: 243 * time.Millisecond, Err: lost}, "retrying in 240ms: connection lost: EOF"},
		{Status{State: Failed, Err: ErrNotLoopback}, "failed: " + ErrNotLoopback.Error()},
		{Status{State: Stopped}, "stopped"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	c := New(Config{Host: "h", Target: echoServer(t)})
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{
		{1, 250 * time.Millisecond},
		{2, 500 * time.Millisecond},
		{3, time.Second},
		{7, 16 * time.Second},
		{8, 30 * time.Second},
		{100, 30 * time.Second},
	} {
		for range 50 {
			got := c.backoff(tc.n)
			lo, hi := time.Duration(float64(tc.want)*0.8), time.Duration(float64(tc.want)*1.2)
			if got < lo || got > hi {
				t.Fatalf("backoff(%d) = %s, want %s ± 20%%", tc.n, got, tc.want)
			}
		}
	}
}

func TestIsPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New("connection refused"), false},
		{&pathError{addr: "h:22", err: errors.New("timeout")}, false},
		{ErrKeepalive, false},
		{&knownhosts.HostKeyError{Host: "h"}, true},
		{&AuthError{User: "u", Host: "h"}, true},
		{&sshconfig.ConfigError{Host: "h", Reason: "bad"}, true},
		{errors.Join(errors.New("x"), ErrForwardingForbidden), true},
		{ErrNotLoopback, true},
		{ErrUncheckable, true},
		{Permanent(errors.New("noexec")), true},
	} {
		if got := isPermanent(tc.err); got != tc.want {
			t.Errorf("isPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}
