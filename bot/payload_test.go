package bot

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// envelopeFrame is a Socket Mode frame the fake built for a person
// changing the multi-select of the README's three-question ask.
func envelopeFrame(tb testing.TB) []byte {
	tb.Helper()
	frame, err := os.ReadFile("testdata/envelope_block_actions.json")
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

// decodeInteractive decodes payload as the bot does, in an interactive
// envelope.
func decodeInteractive(payload []byte) (*callback, error) {
	frame := append([]byte(`{"envelope_id":"e1","type":"interactive","payload":`), payload...)
	_, cb, err := decodeEnvelope(append(frame, '}'))
	return cb, err
}

// slackGoFields is what the bot reads from a payload, as slack-go's full
// decode has it; callbackFields must give the same.
func slackGoFields(cb *slack.InteractionCallback) map[string]any {
	return map[string]any{
		"type": cb.Type, "user": cb.User.ID, "name": cb.User.Name, "team": cb.Team.ID, "app": cb.APIAppID,
		"container": cb.Container, "trigger": cb.TriggerID, "actions": cb.ActionCallback.BlockActions,
		"state": cb.BlockActionState, "view": []any{cb.View.ID, cb.View.CallbackID, cb.View.PrivateMetadata, cb.View.State},
	}
}

func callbackFields(tb testing.TB, cb *callback) map[string]any {
	tb.Helper()
	state, err := cb.blockState()
	if err != nil {
		tb.Fatal(err)
	}
	return map[string]any{
		"type": cb.Type, "user": cb.User.ID, "name": cb.User.Name, "team": cb.Team.ID, "app": cb.APIAppID,
		"container": cb.Container, "trigger": cb.TriggerID, "actions": cb.blockActions,
		"state": state, "view": []any{cb.View.ID, cb.View.CallbackID, cb.View.PrivateMetadata, cb.View.State},
	}
}

func TestDecodePayloadMatchesSlackGo(t *testing.T) {
	var env socketmode.Request
	if err := json.Unmarshal(envelopeFrame(t), &env); err != nil {
		t.Fatal(err)
	}
	payloads := map[string][]byte{"fake's block_actions": env.Payload}
	for i, s := range payloadSeeds {
		payloads["seed "+string(rune('1'+i))] = []byte(s)
	}
	for name, raw := range payloads {
		t.Run(name, func(t *testing.T) {
			var want slack.InteractionCallback
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			got, err := decodeInteractive(raw)
			if err != nil {
				t.Fatal(err)
			}
			if w, g := slackGoFields(&want), callbackFields(t, got); !reflect.DeepEqual(w, g) {
				t.Fatalf("decodeEnvelope differs from slack-go:\n got %+v\nwant %+v", g, w)
			}
		})
	}
}

// TestCallbackOutlivesFrame: the reader's frame buffers are reused once the
// payload is decoded (releaseFrame), so a callback must hold no bytes of its
// frame: scribbling over the frame after decoding changes nothing in it.
func TestCallbackOutlivesFrame(t *testing.T) {
	frames := map[string][]byte{"fake's block_actions": envelopeFrame(t)}
	for i, seed := range payloadSeeds {
		frames["seed "+string(rune('1'+i))] = []byte(`{"envelope_id":"e1","type":"interactive","payload":` + seed + `}`)
	}
	for name, frame := range frames {
		t.Run(name, func(t *testing.T) {
			buf := bytes.Clone(frame)
			_, cb, err := decodeEnvelope(buf)
			if err != nil {
				t.Fatal(err)
			}
			for i := range buf {
				buf[i] = 'x'
			}
			_, want, err := decodeEnvelope(frame)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := callbackFields(t, cb), callbackFields(t, want); !reflect.DeepEqual(g, w) {
				t.Fatalf("the callback changed with its frame:\n got %+v\nwant %+v", g, w)
			}
		})
	}
}

func TestDecodePayloadRejects(t *testing.T) {
	for name, raw := range map[string]string{
		"not json":         `{"type":`,
		"array":            `[1,2]`,
		"user is a string": `{"type":"block_actions","user":"U1"}`,
		"actions object":   `{"type":"block_actions","actions":{"a":1}}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeInteractive([]byte(raw)); err == nil {
				t.Fatal("decoded")
			}
		})
	}
}

func TestBlockState(t *testing.T) {
	for _, c := range []struct {
		name, payload string
		want          *slack.BlockActionStates
		fails         bool
	}{
		{"select changed", `{"type":"block_actions","state":{"values":{"b":{"a":{"type":"static_select","selected_option":{"value":"1"}}}}}}`,
			&slack.BlockActionStates{Values: map[string]map[string]slack.BlockAction{"b": {"a": {Type: "static_select", SelectedOption: slack.OptionBlockObject{Value: "1"}}}}}, false},
		{"no state", `{"type":"block_actions"}`, nil, false},
		{"null state", `{"type":"block_actions","state":null}`, nil, false},
		{"not block_actions", `{"type":"view_submission","state":{"values":{}}}`, nil, false},
		{"values a list", `{"type":"block_actions","state":{"values":[1]}}`, nil, true},
		{"state a string", `{"type":"block_actions","state":"x"}`, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cb, err := decodeInteractive([]byte(c.payload))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got, err := cb.blockState()
			if (err != nil) != c.fails {
				t.Fatalf("blockState error %v, want failure %v", err, c.fails)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("blockState = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestEnvelopeID(t *testing.T) {
	for _, c := range []struct {
		name, frame, want string
	}{
		{"first", `{"envelope_id":"e1","type":"interactive","payload":{"type":"block_actions"}}`, "e1"},
		{"after the payload", `{"payload":{"envelope_id":"inner","x":[1,{"y":"}"}]},"type":"interactive","envelope_id":"e2"}`, "e2"},
		{"hello", `{"type":"hello","num_connections":1,"connection_info":{"app_id":"A1"}}`, ""},
		{"not a string", `{"envelope_id":7}`, ""},
		{"escaped", `{"envelope_id":"a\"b"}`, `a"b`},
		{"key in another case", `{"type":"interactive","Envelope_ID":"e4"}`, "e4"},
		{"not ascii", `{"envelope_id":"é1"}`, "é1"},
		{"not utf-8", "{\"envelope_id\":\"\xff\"}", "\ufffd"},
		{"unterminated", `{"envelope_id":"e1`, ""},
		{"spaced", `{ "envelope_id" : "e3" }`, "e3"},
		{"array", `["envelope_id","e"]`, ""},
		{"truncated", `{"type":"interactive","payload":{"a":`, ""},
		{"empty", ``, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := envelopeID([]byte(c.frame)); got != c.want {
				t.Fatalf("envelopeID = %q, want %q", got, c.want)
			}
		})
	}
	if got := envelopeID(envelopeFrame(t)); got != "f69e5af8-4cac-133d-2e13-821aa554d3e2" {
		t.Fatalf("fake's frame: %q", got)
	}
}

func TestAckAfterDecode(t *testing.T) {
	for _, c := range []struct {
		name, frame string
		want        bool
	}{
		{"block_actions", `{"envelope_id":"e","payload":{"type":"block_actions","message":{"text":"view_submission?"}}}`, true},
		{"view_submission", `{"envelope_id":"e","payload":{"type":"view_submission","view":{}}}`, true},
		{"view_closed", `{"envelope_id":"e","payload":{"type":"view_closed","view":{}}}`, false},
		{"quoted inside a string", `{"envelope_id":"e","payload":{"type":"view_closed","text":"say \"view_submission\" or \"block_actions\""}}`, false},
		{"a label that reads view_submission", `{"envelope_id":"e","payload":{"type":"view_closed","label":"view_submission"}}`, true},
		{"escaped type", `{"envelope_id":"e","payload":{"type":"view\u005fsubmission"}}`, true},
		{"escaped key", `{"envelope_id":"e","payload":{"typ\u0065":"block_actions"}}`, true},
		{"events_api", `{"envelope_id":"e","type":"events_api","payload":{"event":{"type":"app_mention"}}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ackAfterDecode([]byte(c.frame)); got != c.want {
				t.Fatalf("ackAfterDecode = %v, want %v", got, c.want)
			}
		})
	}
	if !ackAfterDecode(envelopeFrame(t)) {
		t.Fatal("the fake's block_actions frame would be acked before its click is stored")
	}
}

// TestJournaled: block_actions envelopes go to the journal (and are acked
// at once), a view_submission never, whatever its escapes or labels say.
func TestJournaled(t *testing.T) {
	for _, c := range []struct {
		name, frame string
		want        bool
	}{
		{"block_actions", `{"envelope_id":"e","payload":{"type":"block_actions","message":{"text":"hi"}}}`, true},
		{"block_actions with an escape", `{"envelope_id":"e","payload":{"type":"block_actions","message":{"text":"caf\u00e9"}}}`, true},
		{"view_submission", `{"envelope_id":"e","payload":{"type":"view_submission","view":{}}}`, false},
		{"block_actions naming view_submission", `{"envelope_id":"e","payload":{"type":"block_actions","message":{"text":"view_submission"}}}`, false},
		{"escaped view_submission with a block_actions label", `{"envelope_id":"e","payload":{"type":"view\u005fsubmission","label":"block_actions"}}`, false},
		{"escaped block_actions", `{"envelope_id":"e","payload":{"type":"block\u005factions"}}`, false},
		{"view_closed", `{"envelope_id":"e","payload":{"type":"view_closed","view":{}}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := journaled([]byte(c.frame)); got != c.want {
				t.Fatalf("journaled = %v, want %v", got, c.want)
			}
		})
	}
	if !journaled(envelopeFrame(t)) {
		t.Fatal("the fake's block_actions frame is not journaled")
	}
}

// FuzzFastAck: an envelope the reader acks before decoding is never one
// whose payload is a view_submission (whose ack may have to carry errors)
// or, unless journaled, a block_actions (acked only once its change is
// stored); no view_submission is journaled; and the id it acks is the
// envelope's.
func FuzzFastAck(f *testing.F) {
	f.Add([]byte(`{"envelope_id":"e","type":"interactive","payload":{"type":"view_submission"}}`))
	f.Add([]byte(`{"envelope_id":"e","type":"interactive","payload":{"type":"view\u005fsubmission"}}`))
	f.Add([]byte(`{"payload":{"type":"block_actions"},"envelope_id":"e2","type":"interactive"}`))
	f.Add(envelopeFrame(f))
	f.Fuzz(func(t *testing.T, frame []byte) {
		var env struct {
			EnvelopeID *string `json:"envelope_id"`
			Payload    struct {
				Type string `json:"type"`
			} `json:"payload"`
		}
		if json.Unmarshal(frame, &env) != nil {
			return
		}
		switch slack.InteractionType(env.Payload.Type) {
		case slack.InteractionTypeViewSubmission, slack.InteractionTypeBlockActions:
			if !ackAfterDecode(frame) {
				t.Fatalf("%s would be acked before its decode: %s", env.Payload.Type, frame)
			}
		}
		// A journaled envelope is acked at once: never a view_submission.
		if slack.InteractionType(env.Payload.Type) == slack.InteractionTypeViewSubmission && journaled(frame) {
			t.Fatalf("a view_submission would be journaled and acked at once: %s", frame)
		}
		if env.EnvelopeID != nil && !hasDuplicateKeys(frame) && envelopeID(frame) != *env.EnvelopeID {
			t.Fatalf("envelopeID = %q, want %q", envelopeID(frame), *env.EnvelopeID)
		}
	})
}

// hasDuplicateKeys reports whether the top-level object repeats a key, up
// to case as encoding/json matches keys (json.Unmarshal keeps the last,
// envelopeID the first).
func hasDuplicateKeys(frame []byte) bool {
	var keys []string
	dec := json.NewDecoder(bytes.NewReader(frame))
	if _, err := dec.Token(); err != nil {
		return true
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return true
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return true
		}
	}
	for i, k := range keys {
		for _, other := range keys[:i] {
			if strings.EqualFold(k, other) {
				return true
			}
		}
	}
	return false
}

func BenchmarkDecodePayload(b *testing.B) {
	frame := envelopeFrame(b)
	b.Run("slack-go socketmode.Request+InteractionCallback", func(b *testing.B) {
		for b.Loop() {
			var req socketmode.Request
			_ = json.Unmarshal(frame, &req)
			var cb slack.InteractionCallback
			_ = json.Unmarshal(req.Payload, &cb)
		}
	})
	b.Run("bot decodeEnvelope", func(b *testing.B) {
		for b.Loop() {
			_, _, _ = decodeEnvelope(frame)
		}
	})
	b.Run("envelopeID+ackAfterDecode (before a fast ack)", func(b *testing.B) {
		for b.Loop() {
			_ = envelopeID(frame)
			_ = ackAfterDecode(frame)
		}
	})
}

// FuzzFrameScans: hasString and hasUnicodeEscape find what bytes.Contains
// finds, on any bytes.
func FuzzFrameScans(f *testing.F) {
	for _, s := range []string{
		`{"payload":{"type":"block_actions"}}`, `"view_submission"`, `xview_submission"`,
		`\"view_submission\"`, `""view_submission""`, `view_submission"`, `\\u`, `\u`, `\`, `\\`,
		`{"type":"view\u005fsubmission"}`, `block_actions"block_actions"`,
	} {
		f.Add([]byte(s))
	}
	f.Add(envelopeFrame(f))
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, tail := range [][]byte{viewSubmissionTail, blockActionsTail} {
			want := bytes.Contains(frame, append([]byte{'"'}, tail...))
			if got := hasString(frame, tail); got != want {
				t.Fatalf("hasString(%q, %q) = %v, want %v", frame, tail, got, want)
			}
		}
		if got, want := hasUnicodeEscape(frame), bytes.Contains(frame, []byte(`\u`)); got != want {
			t.Fatalf("hasUnicodeEscape(%q) = %v, want %v", frame, got, want)
		}
	})
}
