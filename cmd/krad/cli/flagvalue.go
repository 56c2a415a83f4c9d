package cli

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/krad-ade/krad/api"
)

// secondsValue is a flag that takes a Go duration (30s, 5m, 1h), more than 0 and at most the
// API's 30 minutes, and keeps it as whole seconds, rounded up, for wait_secs and timeout_secs.
// *secs stays nil until the flag is given.
type secondsValue struct{ secs **uint32 }

func (v secondsValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return errors.New("must be a duration like 30s, 5m or 1h")
	case d <= 0:
		return errors.New("must be more than 0")
	case d > api.MaxWait:
		return errors.New("must be at most " + shortDuration(api.MaxWait))
	}
	secs := uint32((d + time.Second - 1) / time.Second)
	*v.secs = &secs
	return nil
}

func (v secondsValue) String() string {
	if v.secs == nil || *v.secs == nil {
		return ""
	}
	return shortDuration(time.Duration(**v.secs) * time.Second)
}

func (secondsValue) Type() string { return "duration" }

// shortDuration writes d without zero units: 30m, not 30m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// countValue is a flag that takes a whole number, 1 or more. *n stays nil until it is given.
type countValue struct{ n **int }

func (v countValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return errors.New("must be a whole number, 1 or more")
	}
	*v.n = &n
	return nil
}

func (v countValue) String() string {
	if v.n == nil || *v.n == nil {
		return ""
	}
	return strconv.Itoa(**v.n)
}

func (countValue) Type() string { return "int" }

// stringPtrValue is a string flag that tells "not given" (*p nil) from "given empty" (--group ”).
type stringPtrValue struct{ p **string }

func (v stringPtrValue) Set(s string) error {
	*v.p = &s
	return nil
}

func (v stringPtrValue) String() string {
	if v.p == nil || *v.p == nil {
		return ""
	}
	return **v.p
}

func (stringPtrValue) Type() string { return "string" }
