package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Errors of Person methods.
var (
	// ErrUnknownUser: the Person's user was never added with AddUser.
	ErrUnknownUser = errors.New("slackfake: unknown user")
	// ErrNotFound: no such message, ephemeral message or open view for the person.
	ErrNotFound = errors.New("slackfake: not found")
	// ErrBadChoice: a choice matches no option, or the wrong number of choices.
	ErrBadChoice = errors.New("slackfake: bad choice")
	// ErrConfirmRequired: a click on an element with a confirmation dialog
	// that skipped it; Slack's clients always show the dialog first.
	ErrConfirmRequired = errors.New("slackfake: the element asks for confirmation first")
)

// Person plays a person of the workspace in a Slack client: it keeps the
// client-side state of every message and modal it touches and sends the
// payloads Slack would send. Get one with Server.Person.
type Person struct {
	s  *Server
	id string
	// guarded by s.mu
	viewMark int
	confirms []Confirm
	taps     int
	frozen   map[string][]any // msgKey → blocks the person's client still shows
}

// Confirm records a confirmation dialog the person was shown (and accepted).
type Confirm struct {
	Channel, TS, ViewID string // where: a message (Channel, TS) or a view
	BlockID, ActionID   string
	Title, Text         string
	ConfirmText         string
	DenyText            string
}

// Person returns the scripted person for userID (always the same value for
// the same id). If the user was never added, every method of the Person
// fails with ErrUnknownUser.
func (s *Server) Person(userID string) *Person {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.persons[userID]
	if p == nil {
		p = &Person{s: s, id: userID}
		s.persons[userID] = p
	}
	return p
}

// ID returns the person's user id.
func (p *Person) ID() string { return p.id }

// Taps returns how many times the person touched the screen so far, as a
// phone counts them: a button 1 (2 with its confirmation dialog, or 2 when
// they deny it); a select menu 2 (open, pick); a multi-select 2 + one per
// option picked (open, picks, done); checkboxes 1 per box; a text field 1
// (focus it: typing is not a tap); a form's submit or close button 1.
// Scrolling is not counted.
func (p *Person) Taps() int {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return p.taps
}

// ConfirmsSeen returns the confirmation dialogs shown to the person, oldest
// first.
func (p *Person) ConfirmsSeen() []Confirm {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	return slices.Clone(p.confirms)
}

func (p *Person) userLocked() (*user, error) {
	u := p.s.ws.users[p.id]
	if u == nil || u.IsBot {
		return nil, fmt.Errorf("%w %q", ErrUnknownUser, p.id)
	}
	return u, nil
}

// channelLocked checks that the person is a user of the workspace and
// resolves name to its channel. Errors: ErrUnknownUser, ErrNotFound.
func (p *Person) channelLocked(name string) (*channel, error) {
	if _, err := p.userLocked(); err != nil {
		return nil, err
	}
	ch := p.s.ws.resolveChannel(name)
	if ch == nil {
		return nil, fmt.Errorf("%w: channel %q", ErrNotFound, name)
	}
	return ch, nil
}

// messageSurfaceLocked finds a message (or an ephemeral message of the
// person) and the person's state for it.
func (p *Person) messageSurfaceLocked(channelID, ts string) (*surface, error) {
	s := p.s
	ch := s.ws.resolveChannel(channelID)
	if ch == nil {
		return nil, fmt.Errorf("%w: channel %q", ErrNotFound, channelID)
	}
	if m := s.findMsgLocked(ch.ID, ts); m != nil {
		blocks := m.blocks
		if held, ok := p.frozen[msgKey(ch.ID, ts)]; ok {
			blocks = held
		}
		st := s.stateLocked(p.id, msgKey(ch.ID, ts), blocks)
		return &surface{channel: ch, msg: m.Message, blocks: blocks, state: st}, nil
	}
	e, ok := s.findEphemeralLocked(p.id, ch.ID, ts)
	if !ok {
		return nil, fmt.Errorf("%w: message %s in %s", ErrNotFound, ts, ch.ID)
	}
	v, _ := decodeJSON(e.Blocks)
	blocks, _ := asArr(v)
	st := s.stateLocked(p.id, ephKey(ch.ID, ts), blocks)
	msg := Message{Channel: ch.ID, TS: e.TS, Text: e.Text}
	return &surface{channel: ch, msg: msg, ephemeral: true, blocks: blocks, state: st}, nil
}

// Freeze makes the person's client keep showing the message channel/ts as
// it is now, as a phone that has not yet received an update does: until
// thaw is called, Select, Clear and Click act on these blocks even after
// chat.update changed or emptied the message, and Slack still delivers the
// payloads. Errors: ErrNotFound (no such message), ErrUnknownUser.
func (p *Person) Freeze(channel, ts string) (thaw func(), err error) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, err := p.channelLocked(channel)
	if err != nil {
		return nil, err
	}
	m := s.findMsgLocked(ch.ID, ts)
	if m == nil {
		return nil, fmt.Errorf("%w: message %s in %s", ErrNotFound, ts, ch.ID)
	}
	key := msgKey(ch.ID, ts)
	if p.frozen == nil {
		p.frozen = make(map[string][]any)
	}
	p.frozen[key] = m.blocks
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(p.frozen, key)
	}, nil
}

// act runs prepare under the lock and delivers the payload it returns (a
// nil payload means nothing is sent).
func (p *Person) act(ctx context.Context, prepare func(u *user) (map[string]any, error)) (json.RawMessage, error) {
	p.s.mu.Lock()
	u, err := p.userLocked()
	var payload map[string]any
	if err == nil {
		payload, err = prepare(u)
	}
	if payload != nil {
		p.viewMark = p.s.viewSeq
	}
	p.s.notifyLocked()
	p.s.mu.Unlock()
	if err != nil || payload == nil {
		return nil, err
	}
	return p.s.Deliver(ctx, payload)
}

var selectKinds = []string{"static_select", "multi_static_select", "users_select", "checkboxes"}

// Select chooses in the static_select (exactly one choice),
// multi_static_select or checkboxes (the new whole selection) that find
// picks in the
// message channel/ts. A choice matches an option's value or visible text.
// It sends block_actions and returns the ack's payload; errors: ErrNotFound,
// ErrNoMatch, ErrAmbiguous, ErrBadChoice, ErrUnknownUser, or a Deliver
// error. A select in an input block without dispatch_action only changes the
// state (nothing is sent, nil ack). Where find matches no select menu but
// buttons, as a question drawn as one button per option, the person taps
// the one of them whose text or value is the one choice (as Click does).
func (p *Person) Select(ctx context.Context, channel, ts string, find Finder, choices ...string) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		surf, err := p.messageSurfaceLocked(channel, ts)
		if err != nil {
			return nil, err
		}
		payload, err := p.selectLocked(u, surf, find, choices, false)
		if errors.Is(err, ErrNoMatch) && len(choices) == 1 {
			c := choices[0]
			tap := And(find, func(_, _ string, el map[string]any) bool {
				return textOf(el, "text") == c || getStr(el, "value") == c
			})
			if _, berr := findElement(surf.blocks, []string{"button"}, tap, "button"); berr == nil {
				return p.clickLocked(u, surf, tap)
			}
		}
		return payload, err
	})
}

// Clear empties the static_select (selected_option null) or
// multi_static_select (no options) that find picks, as the iOS client can,
// and sends block_actions. Errors as for Select.
func (p *Person) Clear(ctx context.Context, channel, ts string, find Finder) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		surf, err := p.messageSurfaceLocked(channel, ts)
		if err != nil {
			return nil, err
		}
		return p.selectLocked(u, surf, find, nil, true)
	})
}

func (p *Person) selectLocked(u *user, surf *surface, find Finder, choices []string, clear bool) (map[string]any, error) {
	el, err := findElement(surf.blocks, selectKinds, find, "select menu")
	if err != nil {
		return nil, err
	}
	action := p.s.actionBaseLocked(el)
	field, value, err := selection(el.m, choices, clear)
	if getStr(el.m, "type") == "users_select" {
		field, value, err = p.s.userSelectionLocked(choices, clear)
	}
	if err != nil {
		return nil, err
	}
	action[field] = value
	switch getStr(el.m, "type") {
	case "static_select", "users_select":
		p.taps += 2
	case "multi_static_select":
		p.taps += 2 + len(choices)
	default:
		p.taps += max(len(choices), 1)
	}
	surf.state.set(el.blockID, getStr(el.m, "action_id"), map[string]any{"type": getStr(el.m, "type"), field: cloneJSON(value)})
	p.noteConfirmLocked(surf, el)
	if el.inInput && !getBool(el.block, "dispatch_action") {
		return nil, nil
	}
	return p.s.blockActionsLocked(u, surf, action), nil
}

// userSelectionLocked resolves choices, one user id of the workspace, to
// the selected_user of a users_select (a person picks among the people
// Slack lists, so an unknown id is ErrBadChoice).
func (s *Server) userSelectionLocked(choices []string, clear bool) (string, any, error) {
	if clear {
		return "selected_user", nil, nil
	}
	if len(choices) != 1 {
		return "", nil, fmt.Errorf("%w: a users_select takes exactly one user, got %d", ErrBadChoice, len(choices))
	}
	if _, ok := s.ws.users[choices[0]]; !ok {
		return "", nil, fmt.Errorf("%w: no user %q in the workspace", ErrBadChoice, choices[0])
	}
	return "selected_user", choices[0], nil
}

// selection resolves choices to the selected_option(s) of a select.
func selection(el map[string]any, choices []string, clear bool) (field string, value any, err error) {
	opts := optionsOf(el)
	if getStr(el, "type") == "static_select" {
		if clear {
			return "selected_option", nil, nil
		}
		if len(choices) != 1 {
			return "", nil, fmt.Errorf("%w: a static_select takes exactly one choice, got %d", ErrBadChoice, len(choices))
		}
		opt, err := matchOption(opts, choices[0])
		return "selected_option", opt, err
	}
	picked := []any{}
	for _, c := range choices {
		opt, err := matchOption(opts, c)
		if err != nil {
			return "", nil, err
		}
		picked = append(picked, opt)
	}
	if n, ok := getInt(el, "max_selected_items"); ok && int64(len(picked)) > n {
		return "", nil, fmt.Errorf("%w: %d choices but max_selected_items is %d", ErrBadChoice, len(picked), n)
	}
	return "selected_options", picked, nil
}

func optionsOf(el map[string]any) []map[string]any {
	var out []map[string]any
	for _, o := range getArr(el, "options") {
		if m, ok := asObj(o); ok {
			out = append(out, m)
		}
	}
	for _, g := range getArr(el, "option_groups") {
		if gm, ok := asObj(g); ok {
			out = append(out, optionsOf(gm)...)
		}
	}
	return out
}

func matchOption(opts []map[string]any, choice string) (any, error) {
	for _, o := range opts {
		if getStr(o, "value") == choice || textOf(o, "text") == choice {
			return cloneJSON(o), nil
		}
	}
	var have []string
	for _, o := range opts {
		have = append(have, fmt.Sprintf("%q", getStr(o, "value")))
	}
	return nil, fmt.Errorf("%w: %q matches no option value or text (values: %v)", ErrBadChoice, choice, have)
}

// Click presses the button that find picks in the message channel/ts,
// accepting its confirm dialog if it has one (see ConfirmsSeen), and sends
// block_actions. It returns the ack's payload; errors as for Select.
func (p *Person) Click(ctx context.Context, channel, ts string, find Finder) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		surf, err := p.messageSurfaceLocked(channel, ts)
		if err != nil {
			return nil, err
		}
		return p.clickLocked(u, surf, find)
	})
}

// ClickDenying presses the button as Click does and then denies its
// confirmation dialog: nothing is sent. A button without a dialog is
// ErrBadChoice.
func (p *Person) ClickDenying(ctx context.Context, channel, ts string, find Finder) error {
	_, err := p.act(ctx, func(*user) (map[string]any, error) {
		surf, el, err := p.buttonLocked(channel, ts, find)
		if err != nil {
			return nil, err
		}
		if getObj(el.m, "confirm") == nil {
			return nil, fmt.Errorf("%w: the button has no confirmation dialog", ErrBadChoice)
		}
		p.noteConfirmLocked(surf, el)
		p.taps += 2
		return nil, nil
	})
	return err
}

// ClickSkippingConfirm tries to press the button with no confirmation
// dialog, as a forged or broken client would: Slack refuses one that has a
// dialog (ErrConfirmRequired, nothing sent); one without is pressed.
func (p *Person) ClickSkippingConfirm(ctx context.Context, channel, ts string, find Finder) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		surf, el, err := p.buttonLocked(channel, ts, find)
		if err != nil {
			return nil, err
		}
		if getObj(el.m, "confirm") != nil {
			return nil, fmt.Errorf("%w: %s", ErrConfirmRequired, describe(el))
		}
		return p.clickLocked(u, surf, find)
	})
}

// buttonLocked finds the button find picks in the message channel/ts.
func (p *Person) buttonLocked(channel, ts string, find Finder) (*surface, elemRef, error) {
	surf, err := p.messageSurfaceLocked(channel, ts)
	if err != nil {
		return nil, elemRef{}, err
	}
	el, err := findElement(surf.blocks, []string{"button"}, find, "button")
	return surf, el, err
}

func (p *Person) clickLocked(u *user, surf *surface, find Finder) (map[string]any, error) {
	el, err := findElement(surf.blocks, []string{"button"}, find, "button")
	if err != nil {
		return nil, err
	}
	p.taps++
	if getObj(el.m, "confirm") != nil {
		p.taps++ // the dialog's confirm button
	}
	action := p.s.actionBaseLocked(el)
	action["text"] = cloneJSON(el.m["text"])
	for _, k := range []string{"value", "style", "url"} {
		if v, ok := el.m[k]; ok {
			action[k] = v
		}
	}
	p.noteConfirmLocked(surf, el)
	return p.s.blockActionsLocked(u, surf, action), nil
}

func (p *Person) noteConfirmLocked(surf *surface, el elemRef) {
	c := getObj(el.m, "confirm")
	if c == nil {
		return
	}
	seen := Confirm{
		BlockID: el.blockID, ActionID: getStr(el.m, "action_id"),
		Title: textOf(c, "title"), Text: textOf(c, "text"),
		ConfirmText: textOf(c, "confirm"), DenyText: textOf(c, "deny"),
	}
	if surf.view != nil {
		seen.ViewID = surf.view.id
	} else {
		seen.Channel, seen.TS = surf.channel.ID, surf.msg.TS
	}
	p.confirms = append(p.confirms, seen)
}

// Raw delivers payload as is, adding only "user" (this person) when it is
// absent, and returns the ack's payload; errors: ErrUnknownUser or a
// Deliver error.
func (p *Person) Raw(ctx context.Context, payload map[string]any) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		out := make(map[string]any, len(payload)+1)
		for k, v := range payload {
			out[k] = v
		}
		if _, ok := out["user"]; !ok {
			out["user"] = p.s.wireUserRef(u)
		}
		return out, nil
	})
}
