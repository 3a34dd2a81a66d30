package interaction_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

func fingerprintOf(t *testing.T, body string) string {
	t.Helper()
	var in interaction.AskInput
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return in.Fingerprint()
}

func TestFingerprint(t *testing.T) {
	base := `{"questions":[{"id":"a","question":"Ship?","options":[{"label":"Yes"},{"label":"No","description":"wait"}]}],` +
		`"agent":{"id":"bot","name":"Bot"},"channel":"C1","timeout":"60s","mention":["U1"],"idempotencyKey":"k1"}`
	fp := fingerprintOf(t, base)
	if !strings.HasPrefix(fp, "v1:") || len(fp) != 3+64 {
		t.Fatalf("fingerprint %q: want v1: and 64 hex digits", fp)
	}
	same := map[string]string{
		"again": base,
		"field order and spacing": `{ "idempotencyKey":"k1", "mention":["U1"], "timeout":"60s", "channel":"C1",
			"agent":{"name":"Bot","id":"bot"},
			"questions":[{"options":[{"label":"Yes"},{"description":"wait","label":"No"}],"question":"Ship?","id":"a"}]}`,
		"another idempotency key": strings.Replace(base, `"k1"`, `"k2"`, 1),
		"no idempotency key":      strings.Replace(base, `,"idempotencyKey":"k1"`, ``, 1),
		"duration spelling":       strings.Replace(base, `"60s"`, `"1m"`, 1),
		"duration in seconds":     strings.Replace(base, `"60s"`, `60`, 1),
	}
	for name, body := range same {
		if got := fingerprintOf(t, body); got != fp {
			t.Errorf("%s: fingerprint changed: %s", name, body)
		}
	}
	differ := map[string]string{
		"question text":   strings.Replace(base, `"Ship?"`, `"Ship now?"`, 1),
		"question id":     strings.Replace(base, `"id":"a"`, `"id":"b"`, 1),
		"option label":    strings.Replace(base, `"Yes"`, `"Yeah"`, 1),
		"option order":    strings.Replace(base, `{"label":"Yes"},{"label":"No","description":"wait"}`, `{"label":"No","description":"wait"},{"label":"Yes"}`, 1),
		"description":     strings.Replace(base, `"wait"`, `"later"`, 1),
		"multiSelect":     strings.Replace(base, `"question":"Ship?"`, `"question":"Ship?","multiSelect":true`, 1),
		"header":          strings.Replace(base, `"question":"Ship?"`, `"question":"Ship?","header":"H"`, 1),
		"agent":           strings.Replace(base, `"name":"Bot"`, `"name":"Other"`, 1),
		"channel":         strings.Replace(base, `"C1"`, `"C2"`, 1),
		"user":            strings.Replace(base, `"channel":"C1"`, `"user":"U2"`, 1),
		"thread":          strings.Replace(base, `"channel":"C1"`, `"channel":"C1","threadTs":"1.2"`, 1),
		"timeout":         strings.Replace(base, `"60s"`, `"61s"`, 1),
		"remindAfter":     strings.Replace(base, `"timeout"`, `"remindAfter":"1m","timeout"`, 1),
		"mention":         strings.Replace(base, `["U1"]`, `["U2"]`, 1),
		"responders":      strings.Replace(base, `"mention"`, `"responders":["U3"],"mention"`, 1),
		"second question": strings.Replace(base, `]}],`, `]},{"id":"b","question":"Why?"}],`, 1),
	}
	seen := map[string]string{fp: "base"}
	for name, body := range differ {
		got := fingerprintOf(t, body)
		if prev, ok := seen[got]; ok {
			t.Errorf("%s: same fingerprint as %s: %s", name, prev, body)
		}
		seen[got] = name
	}
}
