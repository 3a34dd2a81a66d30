package interaction

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits of one request: bounds that keep records and forms small. Longer
// labels and texts inside them are shortened on screen, never in the
// answer. What one message can draw (how many questions, options, buttons)
// is the chat surface's to say (asks.Checker; Slack's: package slackid).
const (
	MaxIDLen          = 128   // question id, bytes
	MaxLabelLen       = 500   // option label, characters
	MaxDescriptionLen = 1000  // option description, characters
	MaxHeaderLen      = 150   // question header, characters
	MaxQuestionLen    = 10000 // question text, characters
	MaxDetailLen      = 20000 // question detail, characters
	MaxAgentNameLen   = 200   // agent id or name, characters
)

// checkControl returns an INVALID_QUESTION *Error naming field (a path,
// e.g. "questions[0].options[1].label") when v holds a control character
// other than a tab or a line break (\t, \n, \r): U+0000-U+001F and U+007F.
// A NUL or an escape would otherwise reach Slack, the store and logs as it
// came; tabs and line breaks are ordinary text, which the renderer lays
// out.
func checkControl(field, v string) error {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 0x20 && c != 0x7f || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		return Errorf(InvalidQuestion, "%s: control character %U at byte %d is not allowed", field, rune(c), i)
	}
	return nil
}

// Validate checks a request against the seam's rules and the limits above
// (not a surface's: see asks.Checker).
// It returns nil, or an *Error: EMPTY_QUESTIONS for no questions,
// BAD_INTENT for an intent that does not fit its question, and
// INVALID_QUESTION for everything else, naming the question and field.
func Validate(r Request) error {
	if len(r.Questions) == 0 {
		return Errorf(EmptyQuestions, "the request has no questions")
	}
	if r.Agent != nil {
		if n := utf8.RuneCountInString(r.Agent.ID); n > MaxAgentNameLen {
			return Errorf(InvalidQuestion, "agent.id is %d characters: at most %d", n, MaxAgentNameLen)
		}
		if n := utf8.RuneCountInString(r.Agent.Name); n > MaxAgentNameLen {
			return Errorf(InvalidQuestion, "agent.name is %d characters: at most %d", n, MaxAgentNameLen)
		}
		if err := checkControl("agent.id", r.Agent.ID); err != nil {
			return err
		}
		if err := checkControl("agent.name", r.Agent.Name); err != nil {
			return err
		}
	}
	seen := make(map[string]bool, len(r.Questions))
	for i, q := range r.Questions {
		if err := validateQuestion(i, q); err != nil {
			return err
		}
		if seen[q.ID] {
			return Errorf(InvalidQuestion, "questions[%d]: duplicate id %q", i, q.ID)
		}
		seen[q.ID] = true
		if err := validateKind(r, i); err != nil {
			return err
		}
	}
	return nil
}

func validateQuestion(i int, q Question) error {
	where := fmt.Sprintf("questions[%d]", i)
	switch {
	case strings.TrimSpace(q.ID) == "":
		return Errorf(InvalidQuestion, "%s: id is missing", where)
	case len(q.ID) > MaxIDLen:
		return Errorf(InvalidQuestion, "%s: id is %d bytes: at most %d", where, len(q.ID), MaxIDLen)
	case !utf8.ValidString(q.ID):
		return Errorf(InvalidQuestion, "%s: id is not valid UTF-8", where)
	case strings.TrimSpace(q.Question) == "":
		return Errorf(InvalidQuestion, "%s (%q): question text is missing", where, q.ID)
	}
	for _, f := range []struct{ name, value string }{
		{"id", q.ID},
		{"question", q.Question},
		{"detail", q.Detail},
		{"header", q.Header},
	} {
		if err := checkControl(where+"."+f.name, f.value); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"question", q.Question, MaxQuestionLen},
		{"detail", q.Detail, MaxDetailLen},
		{"header", q.Header, MaxHeaderLen},
	} {
		if n := utf8.RuneCountInString(f.value); n > f.max {
			return Errorf(InvalidQuestion, "%s (%q): %s is %d characters: at most %d", where, q.ID, f.name, n, f.max)
		}
	}
	labels := make(map[string]bool, len(q.Options))
	for j, o := range q.Options {
		ow := fmt.Sprintf("%s.options[%d]", where, j)
		switch {
		case strings.TrimSpace(o.Label) == "":
			return Errorf(InvalidQuestion, "%s: label is empty", ow)
		case utf8.RuneCountInString(o.Label) > MaxLabelLen:
			return Errorf(InvalidQuestion, "%s: label is %d characters: at most %d", ow, utf8.RuneCountInString(o.Label), MaxLabelLen)
		case utf8.RuneCountInString(o.Description) > MaxDescriptionLen:
			return Errorf(InvalidQuestion, "%s: description is %d characters: at most %d", ow, utf8.RuneCountInString(o.Description), MaxDescriptionLen)
		case labels[o.Label]:
			return Errorf(InvalidQuestion, "%s: duplicate label %q", ow, o.Label)
		}
		if err := checkControl(ow+".label", o.Label); err != nil {
			return err
		}
		if err := checkControl(ow+".description", o.Description); err != nil {
			return err
		}
		labels[o.Label] = true
	}
	return validateIntent(where, q, labels)
}

func validateIntent(where string, q Question, labels map[string]bool) error {
	if q.Intent == nil {
		return nil
	}
	switch {
	case q.Intent.Kind != IntentPlanReview:
		return Errorf(BadIntent, "%s (%q): intent kind %q is not %q", where, q.ID, q.Intent.Kind, IntentPlanReview)
	case strings.TrimSpace(q.Detail) == "":
		return Errorf(BadIntent, "%s (%q): a plan-review question needs the plan in detail", where, q.ID)
	case !labels[q.Intent.Approve]:
		return Errorf(BadIntent, "%s (%q): intent.approve %q is not a label of the question", where, q.ID, q.Intent.Approve)
	}
	return nil
}

// CheckAnswer reports whether ans is a valid answer to r: one item per
// question in request order, labels among the question's options without
// duplicates, at most one label for a single-select question, custom text
// never together with labels and never blank. It returns nil or an
// INVALID_QUESTION *Error saying what is wrong.
func CheckAnswer(r Request, ans Answer) error {
	if len(ans.Answers) != len(r.Questions) {
		return Errorf(InvalidQuestion, "answer has %d items for %d questions", len(ans.Answers), len(r.Questions))
	}
	for i, q := range r.Questions {
		a := ans.Answers[i]
		if a.ID != q.ID {
			return Errorf(InvalidQuestion, "answers[%d]: id %q, want %q", i, a.ID, q.ID)
		}
		if a.Custom != "" && len(a.Selected) > 0 {
			return Errorf(InvalidQuestion, "answers[%d]: custom text together with selected labels", i)
		}
		if a.Note != "" && len(a.Selected) == 0 {
			return Errorf(InvalidQuestion, "answers[%d]: a note without a selected label", i)
		}
		if a.Custom != "" && strings.TrimSpace(a.Custom) == "" {
			return Errorf(InvalidQuestion, "answers[%d]: blank custom text", i)
		}
		if !Spec(r, i).Multi && len(a.Selected) > 1 {
			return Errorf(InvalidQuestion, "answers[%d]: %d labels for a single-select question", i, len(a.Selected))
		}
		seen := map[string]bool{}
		for _, l := range a.Selected {
			if seen[l] || !hasLabel(q, l) {
				return Errorf(InvalidQuestion, "answers[%d]: label %q is unknown or repeated", i, l)
			}
			seen[l] = true
		}
	}
	return nil
}

func hasLabel(q Question, label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}
