// Package strictjson decodes JSON into a Go value exactly: every key of an object decoded into a
// struct must be one of the struct's JSON names, spelled as its tag spells it (encoding/json
// takes "Op" for "op", and would run another operation than the one meant), no key may come twice
// in an object, and nothing but white space may follow the value.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/krad-ade/krad/internal/termsafe"
)

// maxKey bounds how much of a key, and maxPath of a key's path, an error quotes: an error's
// message stays short whatever the input.
const (
	maxKey  = 64
	maxPath = 160
)

// Decode decodes data, one JSON value, into v (a non-nil pointer) as encoding/json does, but
// refuses: a key of a struct's object that is not one of its fields' JSON names exactly
// (case-sensitive: "Op" is not "op"), a key that comes twice in one object, and anything after
// the value but white space. On an error v is left as it was. The error names the key and
// where it is (its path: "create.name"), quoted and cut short.
func Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictjson: Decode needs a non-nil pointer")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := check(dec, rv.Type().Elem(), ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more follows the JSON value: only one is taken")
	}
	// The shape is right: decode it, into a fresh value, so that v changes only on success.
	fresh := reflect.New(rv.Type().Elem())
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(fresh.Interface()); err != nil {
		return fmt.Errorf("not valid: %s", termsafe.Escape(err.Error(), maxPath))
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// check reads one value from dec, which t is to hold, and refuses what Decode refuses.
func check(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return syntax(err, path)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: encoding/json judges its type
	}
	custom := t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)
	switch d {
	case '[':
		var elem reflect.Type
		if !custom && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := check(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		switch {
		case custom:
		case t.Kind() == reflect.Struct:
			fields = map[string]reflect.Type{}
			fieldsOf(t, fields)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return syntax(err, path)
			}
			key, _ := tok.(string)
			at := join(path, key)
			if seen[key] {
				return fmt.Errorf("key %s comes twice", quote(at))
			}
			seen[key] = true
			vt := elem
			if fields != nil {
				ft, ok := fields[key]
				if !ok {
					for name := range fields {
						if strings.EqualFold(name, key) {
							return fmt.Errorf("unknown key %s: keys are case-sensitive, the field is %s", quote(at), quote(join(path, name)))
						}
					}
					return fmt.Errorf("unknown key %s", quote(at))
				}
				vt = ft
			}
			if err := check(dec, vt, at); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return syntax(err, path)
	}
	return nil
}

// fieldsOf adds the JSON names of t's fields to fields, with their types, as encoding/json names
// them (an embedded struct without a name gives its own fields).
func fieldsOf(t reflect.Type, fields map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				fieldsOf(ft, fields)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := fields[name]; !ok {
			fields[name] = f.Type
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func quote(s string) string { return termsafe.QuoteMax(s, maxPath) }

func syntax(err error, path string) error {
	msg := "not valid JSON"
	if path != "" {
		msg += " at " + quote(path)
	}
	return fmt.Errorf("%s: %s", msg, termsafe.Escape(err.Error(), maxKey*2))
}
