package interaction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Option is one choice of a question. Label is both what the person sees and
// the value returned in AnswerItem.Selected.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
	// Veto: a submission that selects this option ends the ask at once,
	// answered with that submission, however many responses were wanted.
	Veto bool `json:"veto,omitempty"`
	// Style is the button style: StylePrimary or StyleDanger (a veto
	// option is drawn danger unless styled otherwise).
	Style string `json:"style,omitempty"`
	// Confirm asks Slack's confirmation dialog before a pick of it counts.
	Confirm *Confirm `json:"confirm,omitempty"`
	// Note, NoteRequired or NoteOptional, asks "Why?" in a form when it is
	// picked; the answer item then carries the note.
	Note string `json:"note,omitempty"`
}

// Intent marks a question with a known purpose. The only kind today is
// "plan-review": Detail holds the plan and Approve names the option that
// approves it.
type Intent struct {
	Kind    string `json:"kind"`
	Approve string `json:"approve,omitempty"`
}

// IntentPlanReview is the Intent kind of a plan shown for approval.
const IntentPlanReview = "plan-review"

// Question is one item of a request (AskUserQuestionItem).
type Question struct {
	ID          string   `json:"id"`
	Question    string   `json:"question"`
	Detail      string   `json:"detail,omitempty"`
	Header      string   `json:"header,omitempty"`
	Options     []Option `json:"options,omitempty"`
	MultiSelect bool     `json:"multiSelect,omitempty"`
	Intent      *Intent  `json:"intent,omitempty"`
	// Required: no Skip; a Submit that leaves the question unanswered is
	// refused with a note naming it.
	Required bool `json:"required,omitempty"`
	// AllowOther false removes the "Other…" free-text button; nil or true
	// keeps it.
	AllowOther *bool `json:"allowOther,omitempty"`
	// Display is how its options are drawn (see KindOf); "" is auto.
	Display Display `json:"display,omitempty"`
	// Default is a proposed answer to a free-text question: "Use as is"
	// answers with it, "Edit…" opens the form prefilled.
	Default string `json:"default,omitempty"`
}

// OtherAllowed reports whether the question offers "Other…" free text.
func (q Question) OtherAllowed() bool { return q.AllowOther == nil || *q.AllowOther }

// Agent names the program that asks.
type Agent struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Request is a batch of questions put to a person (AskUserQuestionRequest).
// The abort signal of the seam is the context passed along with it.
type Request struct {
	Questions []Question `json:"questions"`
	Agent     *Agent     `json:"agent,omitempty"`
}

// AnswerItem is the answer to one question. Selected is never nil when
// marshalled; Custom, the "Other" free text, replaces the selection and is
// omitted when unset. A skipped question has neither.
type AnswerItem struct {
	ID       string   `json:"id"`
	Selected []string `json:"selected"`
	Custom   string   `json:"custom,omitempty"`
	// Note is the person's "Why?" for a selected option that asks for one
	// (for a team's answer, "name: note" lines of those who picked it).
	Note string `json:"note,omitempty"`
}

// MarshalJSON writes Selected as [] when it is nil.
func (a AnswerItem) MarshalJSON() ([]byte, error) {
	type plain AnswerItem
	if a.Selected == nil {
		a.Selected = []string{}
	}
	return marshalNoEscape(plain(a))
}

// Skipped reports whether the item answers nothing.
func (a AnswerItem) Skipped() bool { return len(a.Selected) == 0 && a.Custom == "" }

// Answer holds one item per question id, in request order.
type Answer struct {
	Answers []AnswerItem `json:"answers"`
}

// MarshalJSON writes Answers as [] when it is nil.
func (a Answer) MarshalJSON() ([]byte, error) {
	type plain Answer
	if a.Answers == nil {
		a.Answers = []AnswerItem{}
	}
	return marshalNoEscape(plain(a))
}

// marshalNoEscape is json.Marshal without HTML escaping, so answers read
// "<" and "&" as typed; an outer json.Marshal may still escape them.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("90s", "1h30m"). A JSON number is read as seconds.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string or a number of seconds, as
// ParseDuration does.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if err2 := json.Unmarshal(b, &n); err2 != nil {
			return fmt.Errorf("duration must be a string like \"10m\" or a number of seconds")
		}
		s = n.String()
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}
