package interaction

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// This file is the one place that says what kind of control answers a
// question, what each kind accepts and how its picks become labels. The
// renderer (package blocks) draws each kind and reads its payloads; the
// lifecycle (package asks), the front doors and their schemas ask here.
//
// Adding a kind: its Kind, KindSpec and rule in KindOf here (with the JSON
// Schema of any new field in KindFields, which the MCP tool takes, and its
// checks in validateKind); its drawer in blocks/kinds.go and how many
// options Slack can draw of it in slackid.MaxOptionsOf; its display value
// or new field in httpapi/openapi.json (and a field in types.go); tests
// hold the OpenAPI document and the MCP schema to the Go types.

// Kind is the control a question is answered with, decided by KindOf.
type Kind string

// The kinds of question.
const (
	KindText      Kind = "text"       // no options: free text ("Answer…")
	KindMenu      Kind = "menu"       // one pick from a select menu
	KindMultiMenu Kind = "multi-menu" // several picks from a multi-select menu
	KindButtons   Kind = "buttons"    // one button per option: a tap picks
	KindCheckbox  Kind = "checkboxes" // several picks from checkboxes
)

// KindSpec is what a kind is: how many labels it picks and whether a pick
// is an act of its own (a button tap, with no state a Submit could read
// later). How many options a surface can draw of it is the surface's
// (slackid.MaxOptionsOf).
type KindSpec struct {
	Options bool // answered by picking options
	Multi   bool // several labels at once
	Tap     bool // each pick is a click: the message keeps no state of it
}

// Kinds is the table of kinds.
var Kinds = map[Kind]KindSpec{
	KindText:      {},
	KindMenu:      {Options: true},
	KindMultiMenu: {Options: true, Multi: true},
	KindButtons:   {Options: true, Tap: true},
	KindCheckbox:  {Options: true, Multi: true},
}

// Display is how a caller wants a question with options drawn.
type Display string

// The displays a question may ask for.
const (
	DisplayAuto    Display = "auto"    // buttons for a short single choice alone in its ask, else a menu
	DisplayButtons Display = "buttons" // buttons (checkboxes when multi-select), or 400 when they do not fit
	DisplayMenu    Display = "menu"    // a select menu
)

// Displays lists the values of Question.Display ("" is auto).
var Displays = []Display{DisplayAuto, DisplayButtons, DisplayMenu}

// What auto draws as buttons (a design choice: short choices fit a phone).
const (
	AutoMaxButtons  = 5  // auto draws buttons for at most this many options
	AutoMaxLabelLen = 30 // each of at most this many characters
)

// KindOf returns the kind of question i of r: its display, its options
// and whether it is alone in its ask decide (design.md "One tap from a
// phone"): auto draws buttons for the one single-choice question of an
// ask with at most AutoMaxButtons options of at most AutoMaxLabelLen
// characters, a menu otherwise.
func KindOf(r Request, i int) Kind {
	q := r.Questions[i]
	switch {
	case len(q.Options) == 0:
		return KindText
	case q.MultiSelect && q.Display == DisplayButtons:
		return KindCheckbox
	case q.MultiSelect:
		return KindMultiMenu
	case q.Display == DisplayButtons:
		return KindButtons
	case q.Display == DisplayMenu:
		return KindMenu
	case len(r.Questions) == 1 && autoButtons(q):
		return KindButtons
	}
	return KindMenu
}

func autoButtons(q Question) bool {
	if len(q.Options) > AutoMaxButtons {
		return false
	}
	for _, o := range q.Options {
		if utf8.RuneCountInString(o.Label) > AutoMaxLabelLen {
			return false
		}
	}
	return true
}

// Spec returns the KindSpec of question i of r.
func Spec(r Request, i int) KindSpec { return Kinds[KindOf(r, i)] }

// OneTap reports whether one pick answers r: it is one question of one
// pick with options. For an ask one person answers the pick ends it.
func OneTap(r Request) bool {
	return len(r.Questions) == 1 && len(r.Questions[0].Options) > 0 && !Spec(r, 0).Multi
}

// OneAction reports whether any one act on r (a pick, a skip, a text)
// answers it: one question of one pick, or of free text.
func OneAction(r Request) bool {
	return len(r.Questions) == 1 && !Spec(r, 0).Multi
}

// TapResponds reports whether a tap on r is a whole response even on an
// ask that collects several people's: a one-pick question alone, of a
// kind whose picks are taps, or a proposed default's "Use as is", needs
// no Submit (tapping again replaces it).
func TapResponds(r Request) bool {
	return OneAction(r) && (Spec(r, 0).Tap || r.Questions[0].Default != "")
}

// Pick returns the labels of options idx (indexes) of question i of r, in
// option order, once each, never nil. It refuses an index that is not an
// option and several for a question of one pick.
func Pick(r Request, i int, idx []int) ([]string, error) {
	if i < 0 || i >= len(r.Questions) {
		return nil, fmt.Errorf("question %d out of range", i)
	}
	q := r.Questions[i]
	if !Spec(r, i).Multi && len(idx) > 1 {
		return nil, fmt.Errorf("%d options chosen for single-choice question %d", len(idx), i)
	}
	for _, j := range idx {
		if j < 0 || j >= len(q.Options) {
			return nil, fmt.Errorf("option %d of question %d", j, i)
		}
	}
	return optionLabels(q, idx), nil
}

// PickLenient is Pick for a Submit's message state, which a client sends
// as is: indexes that are not options are dropped and a question of one
// pick keeps the first. ok is false when idx named only impossible values.
func PickLenient(r Request, i int, idx []int) (labels []string, ok bool) {
	q := r.Questions[i]
	var good []int
	for _, j := range idx {
		if j >= 0 && j < len(q.Options) {
			good = append(good, j)
		}
	}
	if len(good) == 0 && len(idx) > 0 {
		return nil, false
	}
	if !Spec(r, i).Multi && len(good) > 1 {
		good = good[:1]
	}
	return optionLabels(q, good), true
}

func optionLabels(q Question, idx []int) []string {
	idx = slices.Clone(idx)
	sort.Ints(idx)
	out := []string{}
	for k, j := range idx {
		if k > 0 && idx[k-1] == j {
			continue
		}
		out = append(out, q.Options[j].Label)
	}
	return out
}

// NoteNeeded returns the option among labels of question q that asks for
// a note, if any: picking it opens the "Why?" form before it counts.
func NoteNeeded(q Question, labels []string) (Option, bool) {
	for _, o := range q.Options {
		if o.Note != "" && slices.Contains(labels, o.Label) {
			return o, true
		}
	}
	return Option{}, false
}

// Note values of an option.
const (
	NoteRequired = "required"
	NoteOptional = "optional"
)

// Styles of an option's button.
const (
	StylePrimary = "primary"
	StyleDanger  = "danger"
)

// ButtonStyle is the style an option is drawn with: its own, else danger
// for a veto option.
func (o Option) ButtonStyle() string {
	if o.Style == "" && o.Veto {
		return StyleDanger
	}
	return o.Style
}

// Confirm asks for Slack's confirmation dialog before a pick counts. Its
// JSON is true (the default texts) or an object of the texts to show.
type Confirm struct {
	Title   string `json:"title,omitempty"`
	Text    string `json:"text,omitempty"`
	Confirm string `json:"confirm,omitempty"`
	Deny    string `json:"deny,omitempty"`
}

// MarshalJSON writes true for the default texts, else the object.
func (c Confirm) MarshalJSON() ([]byte, error) {
	if c == (Confirm{}) {
		return []byte("true"), nil
	}
	type plain Confirm
	return json.Marshal(plain(c))
}

// UnmarshalJSON reads true or an object of the four texts; anything else
// (false too: leave the field out) is refused.
func (c *Confirm) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("true")) {
		*c = Confirm{}
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return errors.New("confirm must be true or an object {title, text, confirm, deny}")
	}
	type plain Confirm
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("confirm: %v", err)
	}
	*c = Confirm(p)
	return nil
}

// KindFields is the JSON Schema of the question fields ("question") and
// option fields ("option") that choose and shape a question's kind, with
// descriptions written for a model: the MCP tool's input schema takes
// them from here, so that a kind's fields are described once.
var KindFields = map[string]map[string]string{
	"question": {
		"multiSelect": `{"type": "boolean", "description": "Allow choosing several options. Default false."}`,
		"display":     `{"type": "string", "enum": ["auto", "buttons", "menu"], "description": "How the options are drawn. \"auto\" (default): a question alone in its call with one choice among at most 5 short options (labels up to 30 characters) is drawn as buttons, one tap answers it (best on a phone); anything else as a select menu. \"buttons\" forces buttons (at most 25 options; with multiSelect, checkboxes, at most 10), \"menu\" a select menu."}`,
		"default":     `{"type": "string", "maxLength": 3000, "description": "For a free-text question (no options): text you propose, e.g. a commit message or a reply you drafted. The person sees it and answers with one tap (\"Use as is\") or edits it first; the answer's \"custom\" is the text as they sent it."}`,
	},
	"option": {
		"style":   `{"type": "string", "enum": ["primary", "danger"], "description": "Button colour: \"primary\" for the recommended choice, \"danger\" for a destructive one. A veto option is danger unless you say otherwise."}`,
		"confirm": `{"description": "Ask the person to confirm before the pick counts (against accidental taps on a phone). Use it for risky or irreversible choices (deploy to production, delete data): true, or texts of your own.", "oneOf": [{"type": "boolean", "enum": [true]}, {"type": "object", "properties": {"title": {"type": "string", "maxLength": 100}, "text": {"type": "string", "maxLength": 300}, "confirm": {"type": "string", "maxLength": 30}, "deny": {"type": "string", "maxLength": 30}}, "additionalProperties": false}]}`,
		"note":    `{"type": "string", "enum": ["required", "optional"], "description": "Picking this option asks the person \"Why?\" in a form before it counts; the answer item then carries \"note\" with their words. Use \"required\" when you need the reason to act, e.g. on \"Reject\" so you learn what to change."}`,
	},
}

// validateKind checks the fields that say how question i of r is drawn,
// and that it fits the kind it gets.
func validateKind(r Request, i int) error {
	q := r.Questions[i]
	where := fmt.Sprintf("questions[%d] (%q)", i, q.ID)
	switch {
	case q.Display != "" && !slices.Contains(Displays, q.Display):
		return Errorf(InvalidQuestion, "%s: display %q: want \"auto\", \"buttons\" or \"menu\"", where, q.Display)
	case q.Display != "" && q.Display != DisplayAuto && len(q.Options) == 0:
		return Errorf(InvalidQuestion, "%s: display %q needs options", where, q.Display)
	}
	k := KindOf(r, i)
	for j, o := range q.Options {
		if err := validateOptionKind(fmt.Sprintf("questions[%d].options[%d]", i, j), o, Kinds[k]); err != nil {
			return err
		}
	}
	if q.Default != "" {
		switch n := utf8.RuneCountInString(q.Default); {
		case len(q.Options) > 0:
			return Errorf(InvalidQuestion, "%s: default is for a free-text question (no options)", where)
		case strings.TrimSpace(q.Default) == "":
			return Errorf(InvalidQuestion, "%s: default is blank", where)
		case n > MaxCustomLen:
			return Errorf(InvalidQuestion, "%s: default is %d characters: at most %d", where, n, MaxCustomLen)
		}
		if err := checkControl(fmt.Sprintf("questions[%d].default", i), q.Default); err != nil {
			return err
		}
	}
	return nil
}

// validateOptionKind checks an option's style, note and confirm texts
// (their lengths are the surface's: slackid.CheckRequest).
func validateOptionKind(where string, o Option, k KindSpec) error {
	switch {
	case o.Style != "" && o.Style != StylePrimary && o.Style != StyleDanger:
		return Errorf(InvalidQuestion, "%s: style %q: want %q or %q", where, o.Style, StylePrimary, StyleDanger)
	case o.Note != "" && o.Note != NoteRequired && o.Note != NoteOptional:
		return Errorf(InvalidQuestion, "%s: note %q: want %q or %q", where, o.Note, NoteRequired, NoteOptional)
	case o.Note != "" && k.Multi:
		return Errorf(InvalidQuestion, "%s: a note needs a question of one pick, not a multi-select", where)
	}
	if c := o.Confirm; c != nil {
		for _, f := range []struct{ name, v string }{{"title", c.Title}, {"text", c.Text}, {"confirm", c.Confirm}, {"deny", c.Deny}} {
			if err := checkControl(where+".confirm."+f.name, f.v); err != nil {
				return err
			}
		}
	}
	return nil
}
