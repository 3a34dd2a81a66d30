package interaction

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MaxResponders bounds the people an ask may wait for: "all" expands
// user groups at creation, and more than this many is refused.
const MaxResponders = 50

// ResponseCount is how many people's submissions an ask collects: N ≥ 1,
// or All (every allowed responder). The zero value means 1. Its JSON is a
// number or the string "all".
type ResponseCount struct {
	N   int
	All bool
}

// IsZero reports whether c is unset (one response).
func (c ResponseCount) IsZero() bool { return c.N == 0 && !c.All }

// Many reports whether the ask collects more than one person's response.
func (c ResponseCount) Many() bool { return c.All || c.N > 1 }

// String returns "all" or the count ("1" for the zero value).
func (c ResponseCount) String() string {
	switch {
	case c.All:
		return "all"
	case c.N == 0:
		return "1"
	}
	return strconv.Itoa(c.N)
}

// ParseResponseCount reads "all" or a count ≥ 1, as flags and JSON give it.
func ParseResponseCount(s string) (ResponseCount, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "all") {
		return ResponseCount{All: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return ResponseCount{}, fmt.Errorf("responses %q: want a number of people (1 or more) or \"all\"", s)
	}
	if n < 1 {
		return ResponseCount{}, fmt.Errorf("responses %d: must be 1 or more (or \"all\")", n)
	}
	if n > MaxResponders {
		return ResponseCount{}, fmt.Errorf("responses %d: at most %d people", n, MaxResponders)
	}
	return ResponseCount{N: n}, nil
}

// MarshalJSON writes "all" or the count.
func (c ResponseCount) MarshalJSON() ([]byte, error) {
	if c.All {
		return []byte(`"all"`), nil
	}
	return []byte(strconv.Itoa(max(c.N, 1))), nil
}

// UnmarshalJSON reads a number ≥ 1 or "all".
func (c *ResponseCount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if !strings.EqualFold(s, "all") {
			return fmt.Errorf("responses %q: want a number of people (1 or more) or \"all\"", s)
		}
	} else {
		s = string(b)
	}
	v, err := ParseResponseCount(s)
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// OnTimeout is what an ask's deadline does.
type OnTimeout string

const (
	// OnTimeoutExpire: the ask ends expired (ASK_TIMEOUT); responses that
	// came in are kept on it.
	OnTimeoutExpire OnTimeout = "expire"
	// OnTimeoutAnswer: the ask ends answered with the responses so far when
	// there is at least one, else expired.
	OnTimeoutAnswer OnTimeout = "answer"
)

// ValidateInput checks what Validate checks plus the fields of AskInput
// that shape how an ask is answered: responses, onTimeout, callbackUrl,
// the reach fields. Errors are INVALID_QUESTION naming the field. Whether
// the ids it names (user, channel, responders, …) are ids of the chat
// surface is the surface's to say: see Checker.
func ValidateInput(in AskInput) error {
	if err := Validate(in.Request); err != nil {
		return err
	}
	switch in.OnTimeout {
	case "", OnTimeoutExpire, OnTimeoutAnswer:
	default:
		return Errorf(InvalidQuestion, "onTimeout %q: want %q or %q", in.OnTimeout, OnTimeoutExpire, OnTimeoutAnswer)
	}
	if in.Responses.N < 0 || in.Responses.N > MaxResponders {
		return Errorf(InvalidQuestion, "responses %d: want 1 to %d, or \"all\"", in.Responses.N, MaxResponders)
	}
	if in.Responses.All && len(in.Responders) == 0 {
		return Errorf(InvalidQuestion, `responses "all" needs responders: the user or user-group ids whose answers to wait for`)
	}
	if len(in.IdempotencyKey) > 200 {
		return Errorf(InvalidQuestion, "idempotencyKey is longer than 200 bytes")
	}
	if in.CallbackURL != "" {
		if err := CheckCallbackURL(in.CallbackURL); err != nil {
			return Errorf(InvalidQuestion, "callbackUrl: %v", err)
		}
	}
	if err := validateCallbackEvents(in.CallbackEvents); err != nil {
		return err
	}
	for i, q := range in.Questions {
		if q.Required && !q.OtherAllowed() && len(q.Options) == 0 {
			return Errorf(InvalidQuestion, "questions[%d]: required with allowOther false needs options: nobody could answer it", i)
		}
	}
	return validateReach(in)
}

// CheckCallbackURL checks the syntax of a callback URL: absolute http or
// https with a host. Where it may point (no loopback, link-local or
// metadata addresses) is decided when it is called, as names resolve then.
func CheckCallbackURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: only http and https", s)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return fmt.Errorf("%q: no user or password in the URL", s)
	}
	return nil
}

// TeamAnswer is the one answer agents read of an ask that collected
// several responses: per question the label(s) with the most votes (every
// tied label on a tie, in option order), or, when nobody picked a label
// of it, the people's free text as one custom with a line per person
// ("name: text"): an answer item holds labels or text, never both. A
// question nobody answered is skipped. It also returns the tally: per
// question id, per label, how many people picked it.
func TeamAnswer(r Request, responses []Response) (Answer, map[string]map[string]int) {
	tally := make(map[string]map[string]int, len(r.Questions))
	ans := Answer{Answers: make([]AnswerItem, len(r.Questions))}
	for i, q := range r.Questions {
		counts := map[string]int{}
		var custom []string
		var notes []personNote
		for _, resp := range responses {
			item, ok := itemFor(resp.Answer, q.ID)
			if !ok {
				continue
			}
			for _, l := range item.Selected {
				counts[l]++
			}
			name := resp.User.Name
			if name == "" {
				name = resp.User.ID
			}
			if item.Custom != "" {
				custom = append(custom, name+": "+item.Custom)
			}
			if item.Note != "" {
				notes = append(notes, personNote{name, item.Note, item.Selected})
			}
		}
		if len(counts) > 0 {
			tally[q.ID] = counts
		}
		item := AnswerItem{ID: q.ID, Selected: []string{}}
		best := 0
		for _, n := range counts {
			best = max(best, n)
		}
		if best > 0 {
			for _, l := range labelOrder(q, counts) {
				if counts[l] == best {
					item.Selected = append(item.Selected, l)
				}
			}
		}
		if len(custom) > 0 && len(item.Selected) == 0 {
			item.Custom = strings.Join(custom, "\n")
		}
		var why []string
		for _, n := range notes {
			for _, l := range n.labels {
				if slices.Contains(item.Selected, l) {
					why = append(why, n.who+": "+n.note)
					break
				}
			}
		}
		item.Note = strings.Join(why, "\n")
		ans.Answers[i] = item
	}
	return ans, tally
}

// personNote is one person's note on the labels they picked.
type personNote struct {
	who, note string
	labels    []string
}

// labelOrder lists the counted labels in option order, then any others
// sorted.
func labelOrder(q Question, counts map[string]int) []string {
	var out []string
	seen := map[string]bool{}
	for _, o := range q.Options {
		if _, ok := counts[o.Label]; ok {
			out = append(out, o.Label)
			seen[o.Label] = true
		}
	}
	var rest []string
	for l := range counts {
		if !seen[l] {
			rest = append(rest, l)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func itemFor(a Answer, id string) (AnswerItem, bool) {
	for _, it := range a.Answers {
		if it.ID == id {
			return it, true
		}
	}
	return AnswerItem{}, false
}

// Vetoed returns the first option marked veto that a selects, if any.
func Vetoed(r Request, a Answer) (question, label string, ok bool) {
	for _, q := range r.Questions {
		it, found := itemFor(a, q.ID)
		if !found {
			continue
		}
		for _, o := range q.Options {
			if !o.Veto {
				continue
			}
			for _, l := range it.Selected {
				if l == o.Label {
					return q.ID, o.Label, true
				}
			}
		}
	}
	return "", "", false
}
