package interaction

import (
	"encoding/json"
	"slices"
	"testing"
)

// The schemas of the kind fields the MCP tool takes from KindFields are
// valid JSON and their enums are the values Validate accepts.
func TestKindFieldsEnums(t *testing.T) {
	enum := func(where, name string) []string {
		var s struct{ Enum []string }
		if err := json.Unmarshal([]byte(KindFields[where][name]), &s); err != nil {
			t.Fatalf("%s.%s: %v", where, name, err)
		}
		return s.Enum
	}
	var displays []string
	for _, d := range Displays {
		displays = append(displays, string(d))
	}
	for _, c := range []struct {
		where, name string
		want        []string
	}{
		{"question", "display", displays},
		{"option", "style", []string{StylePrimary, StyleDanger}},
		{"option", "note", []string{NoteRequired, NoteOptional}},
	} {
		if got := enum(c.where, c.name); !slices.Equal(got, c.want) {
			t.Errorf("%s.%s enum %v, want %v", c.where, c.name, got, c.want)
		}
	}
	for where, fields := range KindFields {
		for name, f := range fields {
			if !json.Valid([]byte(f)) {
				t.Errorf("%s.%s is not JSON", where, name)
			}
		}
	}
}

// KindOf: auto draws buttons for a short single choice alone in its ask,
// a menu otherwise; display forces either; multi-select buttons are
// checkboxes. Validate refuses what the forced kind cannot draw.
func TestKindOf(t *testing.T) {
	opts := func(n int, label string) []Option {
		var out []Option
		for i := range n {
			out = append(out, Option{Label: label + string(rune('a'+i))})
		}
		return out
	}
	q := func(o []Option, d Display, multi bool) Question {
		return Question{ID: "q", Question: "?", Options: o, Display: d, MultiSelect: multi}
	}
	long := "a label of more than thirty characters "
	for _, c := range []struct {
		name string
		r    Request
		want Kind
	}{
		{"free text", Request{Questions: []Question{q(nil, "", false)}}, KindText},
		{"auto 5 short", Request{Questions: []Question{q(opts(5, "x"), "", false)}}, KindButtons},
		{"auto 6", Request{Questions: []Question{q(opts(6, "x"), "", false)}}, KindMenu},
		{"auto long label", Request{Questions: []Question{q(opts(2, long), "", false)}}, KindMenu},
		{"auto two questions", Request{Questions: []Question{q(opts(2, "x"), "", false), {ID: "b", Question: "?"}}}, KindMenu},
		{"menu", Request{Questions: []Question{q(opts(2, "x"), DisplayMenu, false)}}, KindMenu},
		{"buttons 20", Request{Questions: []Question{q(opts(20, "x"), DisplayButtons, false)}}, KindButtons},
		{"multi", Request{Questions: []Question{q(opts(3, "x"), "", true)}}, KindMultiMenu},
		{"checkboxes", Request{Questions: []Question{q(opts(3, "x"), DisplayButtons, true)}}, KindCheckbox},
	} {
		if got := KindOf(c.r, 0); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if err := Validate(c.r); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, c := range []struct {
		name string
		q    Question
	}{
		{"bad display", q(opts(2, "x"), "tiles", false)},
		{"display without options", q(nil, DisplayButtons, false)},
		{"bad style", Question{ID: "q", Question: "?", Options: []Option{{Label: "a", Style: "green"}}}},
		{"bad note", Question{ID: "q", Question: "?", Options: []Option{{Label: "a", Note: "always"}}}},
		{"note on multi", Question{ID: "q", Question: "?", MultiSelect: true, Options: []Option{{Label: "a", Note: NoteRequired}}}},
		{"default with options", Question{ID: "q", Question: "?", Default: "x", Options: []Option{{Label: "a"}}}},
		{"blank default", Question{ID: "q", Question: "?", Default: "  "}},
	} {
		if err := Validate(Request{Questions: []Question{c.q}}); ErrorCode(err) != InvalidQuestion {
			t.Errorf("%s: %v, want INVALID_QUESTION", c.name, err)
		}
	}
}

// confirm is true or an object; the answer item's note needs a label.
func TestConfirmJSON(t *testing.T) {
	var o Option
	if err := json.Unmarshal([]byte(`{"label":"a","confirm":true}`), &o); err != nil || o.Confirm == nil || *o.Confirm != (Confirm{}) {
		t.Fatalf("true: %+v %v", o.Confirm, err)
	}
	if b, _ := json.Marshal(o); string(b) != `{"label":"a","confirm":true}` {
		t.Errorf("marshal: %s", b)
	}
	if err := json.Unmarshal([]byte(`{"label":"a","confirm":{"title":"Sure?","deny":"No"}}`), &o); err != nil || o.Confirm.Title != "Sure?" {
		t.Fatalf("object: %+v %v", o.Confirm, err)
	}
	for _, bad := range []string{`false`, `"yes"`, `{"titel":"x"}`} {
		if err := json.Unmarshal([]byte(`{"label":"a","confirm":`+bad+`}`), &o); err == nil {
			t.Errorf("confirm %s accepted", bad)
		}
	}
	r := Request{Questions: []Question{{ID: "q", Question: "?", Options: []Option{{Label: "a"}}}}}
	if err := CheckAnswer(r, Answer{Answers: []AnswerItem{{ID: "q", Note: "why"}}}); err == nil {
		t.Error("a note without a label passed")
	}
}
