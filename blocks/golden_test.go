package blocks

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenJSON is the stable, readable form of a golden file: keys sorted,
// and <, >, & written as such so that escaping is easy to review.
func goldenJSON(t *testing.T, v any) []byte {
	t.Helper()
	v = decode(t, toJSON(t, v))
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./blocks -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %.300s\nwant: %.300s\n(run go test ./blocks -update if the change is intended)", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: got %d lines, want %d", path, len(gl), len(wl))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestGoldenMessages(t *testing.T) { goldenMessages(t, messageCases()) }

// goldenMessages checks each case's message against its golden file and
// Slack's limits.
func goldenMessages(t *testing.T, cases map[string]View) {
	t.Helper()
	for _, name := range sortedKeys(cases) {
		t.Run(name, func(t *testing.T) {
			v := cases[name]
			text, bs := Message(v)
			reportProblems(t, checkMessage(t, name, v, text, bs))
			compareGolden(t, name, goldenJSON(t, struct {
				Text   string        `json:"text"`
				Blocks []slack.Block `json:"blocks"`
			}{text, bs}))
		})
	}
}

func TestGoldenModals(t *testing.T) {
	cases := modalCases()
	for _, name := range sortedKeys(cases) {
		t.Run(name, func(t *testing.T) {
			m := cases[name].render().(slack.ModalViewRequest)
			reportProblems(t, checkModal(t, name, m))
			compareGolden(t, name, goldenJSON(t, m))
		})
	}
}
