package blocks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestActionIDRoundTrip(t *testing.T) {
	for _, r := range []Ref{
		{AskID: "a", Rev: 0, Question: -1, Kind: KindSubmit},
		{AskID: "a1B2c3", Rev: 7, Question: 0, Kind: KindSelect},
		{AskID: strings.Repeat("Z", 40), Rev: 1<<63 - 1, Question: 9, Kind: KindDetails},
		{AskID: "_-_-", Rev: 12, Question: 3, Kind: KindOther},
		{AskID: "x", Rev: 1, Question: 2, Kind: KindSkip},
		{AskID: "x", Rev: 1, Question: -1, Kind: KindCancel},
	} {
		s := ActionID(r)
		if len(s) > 255 {
			t.Errorf("%q: %d bytes", s, len(s))
		}
		got, err := ParseActionID(s)
		if err != nil || got != r {
			t.Errorf("ParseActionID(%q) = %+v, %v; want %+v", s, got, err, r)
		}
		if _, err := ParseBlockID(s); !errors.Is(err, ErrNotOurs) {
			t.Errorf("ParseBlockID(%q) accepted an action kind: %v", s, err)
		}
	}
}

func TestParseBlockID(t *testing.T) {
	v := View{AskID: "ask", Rev: 3}
	for _, k := range []Kind{kindHead, kindWho, kindQuestion, kindControls, kindProgress, kindDivider, kindAnswer, kindOutcome} {
		s := blockID(v, 1, k)
		r, err := ParseBlockID(s)
		if err != nil || r != (Ref{AskID: "ask", Rev: 3, Question: 1, Kind: k}) {
			t.Errorf("ParseBlockID(%q) = %+v, %v", s, r, err)
		}
		if _, err := ParseActionID(s); !errors.Is(err, ErrNotOurs) {
			t.Errorf("ParseActionID(%q) accepted a block kind: %v", s, err)
		}
	}
}

// MessageAskID (and MessageRef's revision) finds the ask of every message
// Message renders (as Slack stores it: block ids on blocks, some blocks
// without one) and of no other.
func TestMessageAskID(t *testing.T) {
	for name, v := range messageCases() {
		_, bs := Message(v)
		raw, err := json.Marshal(bs)
		if err != nil {
			t.Fatal(err)
		}
		if got := MessageAskID(raw); got != v.AskID {
			t.Errorf("%s: MessageAskID = %q, want %q", name, got, v.AskID)
		}
		if r, ok := MessageRef(raw); !ok || r.Rev != v.Rev {
			t.Errorf("%s: MessageRef = %+v %v, want rev %d", name, r, ok, v.Rev)
		}
	}
	for _, blocks := range []string{
		`[{"type":"section","text":"noise 3"}]`,
		`[{"type":"section","block_id":"sa."}]`,
		`[{"type":"section","block_id":"sa.a1b2.3.-1.nokind"}]`,
		`not json`,
	} {
		if got := MessageAskID([]byte(blocks)); got != "" {
			t.Errorf("MessageAskID(%s) = %q, want none", blocks, got)
		}
	}
	if got := MessageAskID([]byte(`[{"type":"section","text":"x"},{"type":"actions","block_id":"sa.zz.0.0.controls"}]`)); got != "zz" {
		t.Errorf("MessageAskID past a block without an id = %q, want zz", got)
	}
}

func TestParseIDHostile(t *testing.T) {
	for _, s := range []string{
		"", ".", "....", "sa", "sa.", "sa....", "sa.a.1.0", "sa.a.1.0.select.", ".sa.a.1.0.select",
		"SA.a.1.0.select", "sb.a.1.0.select", "sa.a.1.0.SELECT", "sa.a.1.0.selectx", "sa.a.1.0.heads",
		"sa..1.0.select", "sa.a b.1.0.select", "sa.a/b.1.0.select", "sa.a\x00.1.0.select", "sa.ä.1.0.select",
		"sa." + strings.Repeat("a", 41) + ".1.0.select",
		"sa.a.-1.0.select", "sa.a.01.0.select", "sa.a.+1.0.select", "sa.a. 1.0.select", "sa.a.1e3.0.select",
		"sa.a.1.-2.select", "sa.a.1.-0.select", "sa.a.1.00.select", "sa.a.1.0x1.select", "sa.a.1..select",
		"sa.a.99999999999999999999.0.select", "sa.a.1.99999999999999999999.select",
		"sa.a.1.0.select\n", " sa.a.1.0.select", "sa.a.1.0.sel\xffect", "\xff\xfe", strings.Repeat("sa.", 1000),
		"sa.a.1.0." + strings.Repeat("x", 300), "actions", "text", "custom",
		"<!channel>", "sa.<!here>.1.0.select", "sa.a.1.0.select|evil",
	} {
		for name, parse := range map[string]func(string) (Ref, error){"action": ParseActionID, "block": ParseBlockID} {
			r, err := parse(s)
			if err == nil {
				t.Errorf("Parse%sID(%q) = %+v, want an error", name, s, r)
			} else if !errors.Is(err, ErrNotOurs) {
				t.Errorf("Parse%sID(%q): %v does not wrap ErrNotOurs", name, s, err)
			}
		}
	}
}

func FuzzParseActionID(f *testing.F) {
	for _, s := range []string{
		"sa.a1B2c3.7.0.select", "sa.a1B2c3.7.-1.submit", "sa.a1B2c3.7.-1.controls", "sa.x.0.9.details",
		"sa.a.01.0.select", "", "sa....", "\xff", "sa.a.1.0.select.",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (Ref, error){ParseActionID, ParseBlockID} {
			r, err := parse(s)
			if err != nil {
				if !errors.Is(err, ErrNotOurs) {
					t.Fatalf("%q: %v does not wrap ErrNotOurs", s, err)
				}
				continue
			}
			if ActionID(r) != s || len(s) > 255 || !validAskID(r.AskID) || r.Rev < 0 || r.Question < -1 {
				t.Fatalf("%q parsed to %+v", s, r)
			}
		}
	})
}
