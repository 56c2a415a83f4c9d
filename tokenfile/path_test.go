package tokenfile

import (
	"path"
	"strings"
	"testing"
)

func TestInstanceOf(t *testing.T) {
	for _, tt := range []struct {
		path, want string // want "" for a path Write never returns
	}{
		{"/home/u/.krad-ade/run/main/token", "main"},
		{"/root/.krad-ade/run/a-1/token", "a-1"},
		{"/.krad-ade/run/main/token", "main"},
		{"home/u/.krad-ade/run/main/token", ""},
		{"/home/u/.krad-ade/run/main/token/", ""},
		{"/home/u/.krad-ade/run/main/other", ""},
		{"/home/u/.krad-ade/run/Main/token", ""},
		{"/home/u/.krad-ade/run/-x/token", ""},
		{"/home/u/.krad-ade/run/../run/main/token", ""},
		{"/home/u/.krad-ade/run//main/token", ""},
		{"/home/u/krad-ade/run/main/token", ""},
		{"/home/u/.krad-ade/bin/main/token", ""},
		{"/home/u\n/.krad-ade/run/main/token", ""},
		{"/home/u/.krad-ade/run/token", ""},
		{"", ""},
	} {
		got, ok := instanceOf(tt.path)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("instanceOf(%q): got %q, %v; want %q", tt.path, got, ok, tt.want)
		}
	}
}

// FuzzInstanceOf: the path the host reports is accepted only in the shape Write promises.
func FuzzInstanceOf(f *testing.F) {
	for _, s := range []string{"/home/u/.krad-ade/run/main/token", "/a/.krad-ade/run/x/token\n", "/.krad-ade/run/../token", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		instance, ok := instanceOf(p)
		if !ok {
			return
		}
		if checkInstance(instance) != nil || !path.IsAbs(p) || path.Clean(p) != p ||
			!strings.HasSuffix(p, "/.krad-ade/run/"+instance+"/token") || strings.ContainsAny(p, "\x00\n\r") {
			t.Fatalf("instanceOf(%q) accepted it, as instance %q", p, instance)
		}
	})
}
