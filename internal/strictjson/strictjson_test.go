package strictjson

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Name string `json:"name"`
}

type sample struct {
	Op    string            `json:"op"`
	Dir   string            `json:"dir,omitempty"`
	In    *inner            `json:"in,omitempty"`
	List  []inner           `json:"list,omitempty"`
	Vars  map[string]string `json:"vars,omitempty"`
	When  time.Time         `json:"when,omitzero"`
	Plain int
	Skip  string `json:"-"`
}

func TestDecodeTakes(t *testing.T) {
	var s sample
	in := `  {"op":"retire","dir":"/r","in":{"name":"a"},"list":[{"name":"b"}],"vars":{"X":"1","x":"2"},"when":"2026-01-02T03:04:05Z","Plain":3}` + "\n"
	if err := Decode([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	want := sample{Op: "retire", Dir: "/r", In: &inner{"a"}, List: []inner{{"b"}}, Vars: map[string]string{"X": "1", "x": "2"},
		When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Plain: 3}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("Decode = %+v, want %+v", s, want)
	}
}

// TestDecodeRefuses: each refusal says what, and where, in a short message; v is left alone.
func TestDecodeRefuses(t *testing.T) {
	long := strings.Repeat("k", 5000)
	for _, tc := range []struct{ in, want string }{
		{`{"Op":"retire"}`, `unknown key Op: keys are case-sensitive, the field is op`},
		{`{"op":"groups","OP":"retire"}`, `unknown key OP: keys are case-sensitive`},
		{`{"in":{"Name":"a"}}`, `unknown key in.Name: keys are case-sensitive, the field is in.name`},
		{`{"list":[{"name":"a"},{"nom":"b"}]}`, `unknown key list[1].nom`},
		{`{"plain":1}`, `unknown key plain: keys are case-sensitive, the field is Plain`},
		{`{"Skip":"x"}`, `unknown key Skip`},
		{`{"other":1}`, `unknown key other`},
		{`{"op":"groups","op":"retire"}`, `key op comes twice`},
		{`{"op":"groups","o\u0070":"retire"}`, `key op comes twice`},
		{`{"vars":{"a":"1","a":"2"}}`, `key vars.a comes twice`},
		{`{"op":"groups"}{"op":"retire"}`, `more follows the JSON value`},
		{`{"op":"groups"} x`, `more follows the JSON value`},
		{`{"op":"groups"`, `not valid JSON`},
		{`{"op":1}`, `not valid: json: cannot unmarshal number`},
		{`{"` + long + `":1}`, `unknown key ` + strings.Repeat("k", 100)},
		{``, `not valid JSON`},
	} {
		s := sample{Op: "untouched"}
		err := Decode([]byte(tc.in), &s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%.60q) = %v, want an error with %q", tc.in, err, tc.want)
			continue
		}
		if len(err.Error()) > 600 {
			t.Errorf("Decode(%.60q): an error of %d bytes", tc.in, len(err.Error()))
		}
		if s.Op != "untouched" {
			t.Errorf("Decode(%.60q) changed v: %+v", tc.in, s)
		}
	}
}

// FuzzDecode: Decode never panics, its errors stay short, and what it takes encoding/json takes
// alike, and Decode takes again once encoded.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"op":"retire","in":{"name":"a"}}`, `{"Op":"x"}`, `{"op":"a","op":"b"}`, `{}{}`, `[1]`, `{"vars":{"a":"b"},"list":[{"name":""}]}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s sample
		err := Decode(data, &s)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		var plain sample
		if err := json.Unmarshal(data, &plain); err != nil {
			t.Fatalf("Decode took %q, encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(s, plain) {
			t.Fatalf("Decode = %+v, encoding/json %+v", s, plain)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back sample
		if err := Decode(again, &back); err != nil {
			t.Fatalf("Decode refuses its own answer encoded %s: %v", again, err)
		}
	})
}
