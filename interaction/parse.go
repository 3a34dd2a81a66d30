package interaction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// MaxCustomLen is the most characters of "Other…" free text a person may
// send for one question: the modal's max_length, checked again wherever
// a payload is read, since payloads can be forged.
const MaxCustomLen = 3000

// MaxDuration bounds every duration a caller may give (timeouts, waits):
// beyond it time.Duration arithmetic overflows.
const MaxDuration = 100 * 365 * 24 * time.Hour

// ParseDuration reads a duration as callers write it, in a query string,
// a JSON field or a flag: a Go duration ("90s", "1h30m") or a number of
// seconds ("90", "1.5"). It refuses NaN, infinities, negative values and
// anything over MaxDuration, with a message naming the value.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return checkDuration(s, d)
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
		return 0, fmt.Errorf("duration %q: want a duration like \"10m\" or a number of seconds", s)
	}
	if secs < 0 {
		return 0, fmt.Errorf("duration %q: must not be negative", s)
	}
	if secs > MaxDuration.Seconds() {
		return 0, fmt.Errorf("duration %q: at most %s", s, MaxDuration)
	}
	return checkDuration(s, time.Duration(secs*float64(time.Second)))
}

func checkDuration(s string, d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, fmt.Errorf("duration %q: must not be negative", s)
	case d > MaxDuration:
		return 0, fmt.Errorf("duration %q: at most %s", s, MaxDuration)
	}
	return d, nil
}

// CheckFields reports the first object key of the JSON document data that
// the Go value v (a pointer to a struct, as passed to json.Unmarshal) has
// no field for, as an INVALID_QUESTION *Error naming its path
// ("questions[0].optionz") and the nearest known name as a hint. Keys must
// be exactly the field's JSON name ("TIMEOUT" is refused, with "timeout" as
// the hint), though encoding/json would match them case-insensitively: run
// it before decoding, so that what a body says is what is read. An alias of
// QuestionAliases is a known name wherever its field is. Fields of type
// json.RawMessage, any or a map accept anything. It returns nil for data
// that does not parse: json.Unmarshal reports that better.
func CheckFields(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return nil
	}
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	return checkFields(doc, t, "")
}

// QuestionAliases is the one alias policy of every door (HTTP, MCP, the
// CLI's --json): the other name a question field may be given, alias →
// field. multi_select is what deepseek-harness's model writes. Nothing else
// has an alias, and no name is matched but exactly.
var QuestionAliases = map[string]string{"multi_select": "multiSelect"}

// ResolveAliases returns the JSON document data with every alias of
// QuestionAliases in the objects of its "questions" array renamed to the
// field's name; when both are given the field's own name wins. Data
// without aliases (or that does not parse) is returned as it is.
func ResolveAliases(data []byte) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return data
	}
	var qs []map[string]json.RawMessage
	if json.Unmarshal(top["questions"], &qs) != nil {
		return data
	}
	changed := false
	for _, q := range qs {
		for alias, field := range QuestionAliases {
			v, ok := q[alias]
			if !ok {
				continue
			}
			delete(q, alias)
			if _, both := q[field]; !both {
				q[field] = v
			}
			changed = true
		}
	}
	if !changed {
		return data
	}
	b, err := json.Marshal(qs)
	if err != nil {
		return data
	}
	top["questions"] = b
	out, err := json.Marshal(top)
	if err != nil {
		return data
	}
	return out
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func checkFields(doc any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessageType || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil // the type reads its own JSON
	}
	switch d := doc.(type) {
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return nil
		}
		fields := jsonFields(t)
		for alias, field := range QuestionAliases {
			if ft, ok := fields[field]; ok {
				fields[alias] = ft
			}
		}
		keys := make([]string, 0, len(d))
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := lookupField(fields, k)
			p := joinPath(path, k)
			if !ok {
				return unknownField(p, k, fields)
			}
			if err := checkFields(d[k], ft, p); err != nil {
				return err
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return nil
		}
		for i, e := range d {
			if err := checkFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// jsonFields maps the JSON names of t's fields, embedded structs' fields
// included, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func lookupField(fields map[string]reflect.Type, k string) (reflect.Type, bool) {
	t, ok := fields[k]
	return t, ok
}

func unknownField(path, key string, fields map[string]reflect.Type) error {
	best, bestDist := "", 1<<30
	for name := range fields {
		d := editDistance(strings.ToLower(key), strings.ToLower(name))
		if d < bestDist || d == bestDist && name < best {
			best, bestDist = name, d
		}
	}
	if best != "" && bestDist <= max(2, len(key)/3) {
		return Errorf(InvalidQuestion, "%s: unknown field (did you mean %q?)", path, best)
	}
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return Errorf(InvalidQuestion, "%s: unknown field (known: %s)", path, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// IsLinkURL reports whether u may be shown as a link: an absolute http or
// https URL with a host, or a mailto URL, without white space or control
// characters. Anything else (javascript:, relative, data:) is shown as
// text.
func IsLinkURL(u string) bool {
	if u == "" || strings.ContainsFunc(u, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return false
	}
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	switch strings.ToLower(p.Scheme) {
	case "http", "https":
		return p.Host != ""
	case "mailto":
		return p.Opaque != ""
	}
	return false
}

// JSONNames returns the JSON names of the fields of the struct v (or that
// v points to), sorted: what the schemas of the front doors must describe.
func JSONNames(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for name := range jsonFields(t) {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
