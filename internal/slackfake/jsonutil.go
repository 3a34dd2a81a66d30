package slackfake

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// decodeJSON decodes JSON keeping numbers exact (json.Number).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

// mustJSON marshals v; values built by this package always marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func asObj(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

func asArr(v any) ([]any, bool) {
	a, ok := v.([]any)
	return a, ok
}

func getStr(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func getObj(m map[string]any, key string) map[string]any {
	o, _ := m[key].(map[string]any)
	return o
}

func getArr(m map[string]any, key string) []any {
	a, _ := m[key].([]any)
	return a
}

func getBool(m map[string]any, key string) bool {
	b, _ := m[key].(bool)
	return b
}

// getInt reads an integral JSON number; ok is false when absent or not an integer.
func getInt(m map[string]any, key string) (int64, bool) {
	switch n := m[key].(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		if n == math.Trunc(n) {
			return int64(n), true
		}
	}
	return 0, false
}

// textOf returns the "text" of a text object stored under key.
func textOf(m map[string]any, key string) string {
	return getStr(getObj(m, key), "text")
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// cloneJSON deep-copies a decoded JSON value.
func cloneJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = cloneJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = cloneJSON(x)
		}
		return out
	default:
		return v
	}
}

func randHex(nbytes int) string {
	b := make([]byte, nbytes)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// randID returns prefix followed by n random upper-case alphanumerics.
func randID(prefix string, n int) string {
	return prefix + randFrom("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ", n)
}

// randAlnum returns n random letters and digits, like Slack's generated ids.
func randAlnum(n int) string {
	return randFrom("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", n)
}

func randFrom(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func newUUID() string {
	h := randHex(16)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func itoa(i int) string { return strconv.Itoa(i) }
