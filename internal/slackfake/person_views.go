package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ErrBadAck: the app's ack to a view_submission cannot be applied (Slack
// would show the person an error and keep the view open).
var ErrBadAck = errors.New("slackfake: unusable view_submission ack")

// ViewErrors is returned by Submit when the view stays open with field
// errors: from the app's {"response_action":"errors"} ack, or from the
// client's own check of required inputs (Local, nothing sent).
type ViewErrors struct {
	// Errors maps an input block_id to its message.
	Errors map[string]string
	// Unknown lists keys of Errors that name no input block of the view
	// (Slack shows the person a generic error for such a response).
	Unknown []string
	// Local is true when the client refused to submit (empty required
	// input, text shorter than min_length) and no payload was sent.
	Local bool
}

// Error lists the field errors, sorted by block_id.
func (e *ViewErrors) Error() string {
	keys := slices.Sorted(maps.Keys(e.Errors))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + e.Errors[k]
	}
	msg := "slackfake: view errors: " + strings.Join(parts, "; ")
	if len(e.Unknown) > 0 {
		msg += fmt.Sprintf(" (not input blocks: %v)", e.Unknown)
	}
	return msg
}

// WaitView waits until a view of the person is opened, pushed or updated
// after the person's last payload, and returns the person's top open view.
// Errors: ctx.Err(), ErrClosed.
func (p *Person) WaitView(ctx context.Context) (View, error) {
	var out View
	err := p.s.WaitFor(ctx, func() bool {
		p.s.mu.Lock()
		defer p.s.mu.Unlock()
		views := p.s.userViewsLocked(p.id)
		if !slices.ContainsFunc(views, func(v *viewRec) bool { return v.seq > p.viewMark }) {
			return false
		}
		top := views[len(views)-1]
		out = top.export()
		return true
	})
	return out, err
}

func (p *Person) openViewLocked(viewID string) (*viewRec, error) {
	v := p.s.views[viewID]
	if v == nil || !v.open || v.user != p.id {
		return nil, fmt.Errorf("%w: no open view %q for %s", ErrNotFound, viewID, p.id)
	}
	return v, nil
}

var textInputKinds = []string{"plain_text_input", "email_text_input", "url_text_input", "number_input"}

// Type sets the value of the text input that find picks in the person's
// open view viewID, locally as typing does (nothing is sent). Errors:
// ErrNotFound, ErrNoMatch, ErrAmbiguous, ErrUnknownUser, ErrBadChoice when
// text is longer than the input's max_length.
func (p *Person) Type(ctx context.Context, viewID string, find Finder, text string) error {
	_, err := p.act(ctx, func(*user) (map[string]any, error) {
		v, err := p.openViewLocked(viewID)
		if err != nil {
			return nil, err
		}
		el, err := findElement(v.blocks, textInputKinds, find, "text input")
		if err != nil {
			return nil, err
		}
		if n, ok := getInt(el.m, "max_length"); ok && int64(runeLen(text)) > n {
			return nil, fmt.Errorf("%w: %d characters but max_length is %d", ErrBadChoice, runeLen(text), n)
		}
		var val any = text
		if text == "" {
			val = nil
		}
		v.state.set(el.blockID, getStr(el.m, "action_id"), map[string]any{"type": getStr(el.m, "type"), "value": val})
		p.taps++ // focus the field
		return nil, nil
	})
	return err
}

// SelectInView chooses in a select of the open view viewID, like Select.
// Inside an input block without dispatch_action only the state changes.
func (p *Person) SelectInView(ctx context.Context, viewID string, find Finder, choices ...string) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		v, err := p.openViewLocked(viewID)
		if err != nil {
			return nil, err
		}
		return p.selectLocked(u, &surface{view: v, blocks: v.blocks, state: v.state}, find, choices, false)
	})
}

// ClickInView presses a button of the open view viewID, like Click.
func (p *Person) ClickInView(ctx context.Context, viewID string, find Finder) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		v, err := p.openViewLocked(viewID)
		if err != nil {
			return nil, err
		}
		return p.clickLocked(u, &surface{view: v, blocks: v.blocks, state: v.state}, find)
	})
}

// Submit presses the submit button of the open view viewID: it sends
// view_submission and applies the ack (empty: the view closes; "clear": the
// stack closes; "update"/"push": the new view shows; "errors": it stays
// open). It returns the ack's payload and a *ViewErrors for field errors,
// ErrBadAck for an unusable ack, or ErrNotFound, ErrUnknownUser, a Deliver
// error.
func (p *Person) Submit(ctx context.Context, viewID string) (json.RawMessage, error) {
	ack, err := p.act(ctx, func(u *user) (map[string]any, error) {
		v, err := p.openViewLocked(viewID)
		if err != nil {
			return nil, err
		}
		p.taps++
		if verr := localInputErrors(v); verr != nil {
			return nil, verr
		}
		return p.s.viewSubmissionLocked(u, v), nil
	})
	if err != nil {
		return ack, err
	}
	return ack, p.s.applySubmissionAck(p.id, viewID, ack)
}

// localInputErrors is the client's own check before submitting.
func localInputErrors(v *viewRec) *ViewErrors {
	errs := map[string]string{}
	for _, b := range v.blocks {
		bm, _ := asObj(b)
		if getStr(bm, "type") != "input" {
			continue
		}
		for _, el := range blockElements(bm) {
			if msg := inputProblem(el, v.state.get(el.blockID, getStr(el.m, "action_id")), getBool(bm, "optional")); msg != "" {
				errs[el.blockID] = msg
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &ViewErrors{Errors: errs, Local: true}
}

func inputProblem(el elemRef, val map[string]any, optional bool) string {
	empty := true
	for k, x := range val {
		if k == "type" || x == nil {
			continue
		}
		if a, ok := x.([]any); ok && len(a) == 0 {
			continue
		}
		empty = false
	}
	if empty {
		if optional {
			return ""
		}
		return "Please complete this required field."
	}
	if n, ok := getInt(el.m, "min_length"); ok {
		if s, _ := val["value"].(string); int64(runeLen(s)) < n {
			return fmt.Sprintf("Please enter at least %d characters.", n)
		}
	}
	return ""
}

type submissionAck struct {
	ResponseAction string            `json:"response_action"`
	Errors         map[string]string `json:"errors"`
	View           json.RawMessage   `json:"view"`
}

// applySubmissionAck applies the app's answer to a view_submission.
func (s *Server) applySubmissionAck(user, viewID string, ack json.RawMessage) error {
	var a submissionAck
	if len(ack) > 0 {
		if err := json.Unmarshal(ack, &a); err != nil {
			return fmt.Errorf("%w: %v", ErrBadAck, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.views[viewID]
	if v == nil || !v.open || v.user != user {
		return nil // closed meanwhile (e.g. views.open replaced it)
	}
	switch a.ResponseAction {
	case "":
		s.closeFromLocked(v)
	case "clear":
		s.closeStackLocked(v.root)
	case "errors":
		return s.viewErrorsLocked(v, a.Errors)
	case "update", "push":
		return s.ackViewLocked(v, a)
	default:
		return fmt.Errorf("%w: unknown response_action %q", ErrBadAck, a.ResponseAction)
	}
	return nil
}

func (s *Server) viewErrorsLocked(v *viewRec, errs map[string]string) error {
	inputs := map[string]bool{}
	for _, b := range v.blocks {
		if bm, _ := asObj(b); getStr(bm, "type") == "input" {
			inputs[getStr(bm, "block_id")] = true
		}
	}
	verr := &ViewErrors{Errors: maps.Clone(errs)}
	for k := range errs {
		if !inputs[k] {
			verr.Unknown = append(verr.Unknown, k)
		}
	}
	slices.Sort(verr.Unknown)
	if len(verr.Unknown) > 0 {
		s.logf("view %s: response_action errors names non-input blocks %v; Slack shows a generic error", v.id, verr.Unknown)
	}
	v.errors = maps.Clone(errs)
	s.emitLocked(Event{Type: EventViewUpdated, User: v.user, ViewID: v.id})
	return verr
}

func (s *Server) ackViewLocked(v *viewRec, a submissionAck) error {
	if len(a.View) == 0 {
		return fmt.Errorf("%w: response_action %q without a view", ErrBadAck, a.ResponseAction)
	}
	def, rep := parseView(string(a.View))
	if rep != nil {
		msgs, _ := getObj(rep.body, "response_metadata")["messages"].([]string)
		return fmt.Errorf("%w: response_action %q view: %s %v", ErrBadAck, a.ResponseAction, rep.errorCode(), msgs)
	}
	if a.ResponseAction == "update" {
		s.updateViewLocked(v, def)
		return nil
	}
	if len(s.stackLocked(v.root)) >= maxViewStack {
		return fmt.Errorf("%w: push_limit_reached", ErrBadAck)
	}
	s.newViewLocked(v.user, "", def, v)
	return nil
}

// Close dismisses the open view viewID (and any view pushed above it), as
// the person pressing Cancel/close. When the view set notify_on_close it
// sends view_closed and returns the ack's payload; otherwise it sends
// nothing and returns nil. Errors: ErrNotFound, ErrUnknownUser, a Deliver
// error.
func (p *Person) Close(ctx context.Context, viewID string) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		v, err := p.openViewLocked(viewID)
		if err != nil {
			return nil, err
		}
		p.s.closeFromLocked(v)
		p.taps++
		if !getBool(v.def, "notify_on_close") {
			return nil, nil
		}
		return p.s.viewClosedLocked(u, v, false), nil
	})
}
