package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestToolArguments(t *testing.T) {
	tests := []struct {
		pairs   []string
		json    string
		want    string
		wantErr string
	}{
		{want: ""},
		{pairs: []string{"title=flaky TestRetry"}, want: `{"title":"flaky TestRetry"}`},
		{pairs: []string{"title=a=b", "count:=3", "ci:=true", "labels:=[\"x\", \"y\"]", "empty="},
			want: `{"title":"a=b","count":3,"ci":true,"labels":["x","y"],"empty":""}`},
		{pairs: []string{"z=1", "a=2"}, want: `{"z":"1","a":"2"}`},
		{pairs: []string{"t=<\"$(x)\">\n"}, want: `{"t":"\u003c\"$(x)\"\u003e\n"}`},
		{json: ` {"title": "x", "n": [1, 2]} `, want: `{"title":"x","n":[1,2]}`},
		{pairs: []string{"title"}, wantErr: `--arg "title": give K=V, or K:=JSON`},
		{pairs: []string{"=x"}, wantErr: "the name before = is empty"},
		{pairs: []string{":=3"}, wantErr: "the name before = is empty"},
		{pairs: []string{"a=1", "a:=2"}, wantErr: `"a" is given twice`},
		{pairs: []string{"n:=three"}, wantErr: "after := comes one JSON value"},
		{pairs: []string{"n:=1 2"}, wantErr: "after := comes one JSON value"},
		{pairs: []string{"n:="}, wantErr: "after := comes one JSON value"},
		{json: `[1]`, wantErr: "--json must be one JSON object"},
		{json: `null`, wantErr: "--json must be one JSON object"},
		{json: `{"a":1}{}`, wantErr: "--json must be one JSON object"},
		{pairs: []string{"a=1"}, json: `{}`, wantErr: "not both"},
	}
	for _, tt := range tests {
		got, err := toolArguments(tt.pairs, tt.json)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("toolArguments(%q, %q): got %s, %v; want an error with %q", tt.pairs, tt.json, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("toolArguments(%q, %q): got %s, %v; want %s", tt.pairs, tt.json, got, err, tt.want)
		}
	}
}

// FuzzToolArguments: whatever --arg pairs and --json a person types, the arguments are one JSON
// object holding each pair's name, or a usage error that does not echo a control character.
func FuzzToolArguments(f *testing.F) {
	f.Add("title=flaky", "count:=3", "")
	f.Add("a=1", "a=2", "")
	f.Add("", "", `{"a":[1,{"b":null}]}`)
	f.Add("n:=\"x\"", "=", "")
	f.Add("k:={}", "\x1b[2J=1", "")
	f.Fuzz(func(t *testing.T, p1, p2, js string) {
		var pairs []string
		for _, p := range []string{p1, p2} {
			if p != "" {
				pairs = append(pairs, p)
			}
		}
		got, err := toolArguments(pairs, js)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\x1b\x00\r") {
				t.Fatalf("the error holds a control character: %q", err)
			}
			return
		}
		if got == nil {
			if len(pairs) > 0 || js != "" {
				t.Fatalf("no arguments from %q, %q", pairs, js)
			}
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(got, &obj); err != nil || obj == nil {
			t.Fatalf("arguments %s from %q, %q are not one JSON object: %v", got, pairs, js, err)
		}
		for _, p := range pairs {
			k, _, _ := strings.Cut(p, "=")
			if _, ok := obj[strings.TrimSuffix(k, ":")]; !ok {
				t.Fatalf("arguments %s lack the name of %q", got, p)
			}
		}
	})
}
