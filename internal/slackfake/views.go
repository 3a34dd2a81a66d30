package slackfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// View is a modal as the fake holds it.
type View struct {
	ID              string
	ExternalID      string
	User            string // the person who sees it
	TriggerID       string // trigger exchanged to open or push it
	CallbackID      string
	PrivateMetadata string
	Hash            string
	Title           string
	Submit          string
	Close           string
	RootViewID      string
	PreviousViewID  string
	NotifyOnClose   bool
	ClearOnClose    bool
	// Blocks are the view's blocks with generated block_id/action_id filled in.
	Blocks json.RawMessage
	// State is the person's current input: {"values":{block_id:{action_id:{…}}}}.
	State json.RawMessage
	// Errors are the field errors of the last response_action "errors".
	Errors  map[string]string
	Open    bool
	Updates int // views.update calls and response_action updates applied
}

type viewRec struct {
	id, externalID, user, trigger string
	root, previous, hash          string
	def                           map[string]any // the view object as sent, blocks normalised
	blocks                        []any
	state                         *clientState
	errors                        map[string]string
	open                          bool
	updates                       int
	seq                           int  // view sequence at open/update: for WaitView
	openSeq                       int  // for stack order
	home                          bool // a Home tab (views.publish), never a modal
}

type trigger struct {
	user    string
	created time.Time
	used    bool
}

// newTriggerLocked registers a fresh trigger_id for user.
func (s *Server) newTriggerLocked(user string) string {
	now := s.now()
	id := fmt.Sprintf("%d.%d.%s", now.Unix(), now.Nanosecond()%1e6+1000000, randHex(16))
	s.triggers[id] = &trigger{user: user, created: now}
	return id
}

// checkTriggerLocked finds an exchangeable trigger.
func (s *Server) checkTriggerLocked(id string) (*trigger, *reply) {
	t := s.triggers[id]
	var rep reply
	switch {
	case id == "" || t == nil:
		rep = errReplyMsgs("invalid_arguments", []string{"invalid `trigger_id`"})
	case t.used:
		rep = errReply("exchanged_trigger_id")
	case s.now().Sub(t.created) > s.cfg.TriggerTTL:
		rep = errReply("expired_trigger_id")
	default:
		return t, nil
	}
	return nil, &rep
}

// parseView decodes and checks a view object given as JSON text.
func parseView(raw string) (map[string]any, *reply) {
	v, err := decodeJSON([]byte(raw))
	view, ok := asObj(v)
	if raw == "" || err != nil || !ok {
		rep := errReplyMsgs("invalid_arguments", []string{"[ERROR] missing or malformed `view`: must provide a JSON object"})
		return nil, &rep
	}
	errs, tooLarge := validateModal(view)
	if tooLarge {
		rep := errReply("view_too_large")
		return nil, &rep
	}
	if len(errs) > 0 {
		rep := errReplyMsgs("invalid_arguments", prefixed(errs))
		return nil, &rep
	}
	view["blocks"] = normalizeBlocks(getArr(view, "blocks"))
	return view, nil
}

func (s *Server) newViewLocked(user, trig string, def map[string]any, previous *viewRec) *viewRec {
	s.viewSeq++
	v := &viewRec{id: randID("V", 10), user: user, trigger: trig, open: true, seq: s.viewSeq, openSeq: s.viewSeq}
	v.root = v.id
	if previous != nil {
		v.root, v.previous = previous.root, previous.id
	}
	v.setDefinition(def, s.now())
	v.state = initialState(v.blocks)
	s.views[v.id] = v
	s.emitLocked(Event{Type: EventViewOpened, User: user, ViewID: v.id})
	return v
}

func (v *viewRec) setDefinition(def map[string]any, now time.Time) {
	v.def = def
	v.blocks = getArr(def, "blocks")
	v.externalID = getStr(def, "external_id")
	v.hash = fmt.Sprintf("%d.%s", now.Unix(), randAlnum(8))
	v.errors = nil
}

// updateViewLocked replaces a view's content, keeping the person's input
// for unchanged block_ids.
func (s *Server) updateViewLocked(v *viewRec, def map[string]any) {
	s.viewSeq++
	v.seq = s.viewSeq
	v.setDefinition(def, s.now())
	v.state = v.state.rebase(v.blocks)
	v.updates++
	s.emitLocked(Event{Type: EventViewUpdated, User: v.user, ViewID: v.id})
}

// stackLocked returns the open views of the stack rooted at root, bottom first.
func (s *Server) stackLocked(root string) []*viewRec {
	var out []*viewRec
	for _, v := range s.views {
		if v.open && v.root == root {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *viewRec) int { return a.openSeq - b.openSeq })
	return out
}

// userViewsLocked returns the user's open views, oldest first.
func (s *Server) userViewsLocked(user string) []*viewRec {
	var out []*viewRec
	for _, v := range s.views {
		if v.open && v.user == user {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b *viewRec) int { return a.openSeq - b.openSeq })
	return out
}

// closeFromLocked closes v and every view pushed above it.
func (s *Server) closeFromLocked(v *viewRec) {
	for _, x := range s.stackLocked(v.root) {
		if x.openSeq >= v.openSeq {
			x.open = false
			s.emitLocked(Event{Type: EventViewClosed, User: x.user, ViewID: x.id})
		}
	}
}

func (s *Server) closeStackLocked(root string) {
	if st := s.stackLocked(root); len(st) > 0 {
		s.closeFromLocked(st[0])
	}
}

// wireView is the view object Slack returns and puts in payloads, in the
// team of the person it is shown to. s.mu held.
func (s *Server) wireView(v *viewRec) map[string]any {
	team := s.teamOfUserLocked(v.user).id
	out := maps.Clone(v.def)
	maps.Copy(out, map[string]any{
		"id": v.id, "team_id": team, "type": map[bool]string{false: "modal", true: "home"}[v.home],
		"blocks":           nonNil(v.blocks),
		"private_metadata": getStr(v.def, "private_metadata"),
		"callback_id":      getStr(v.def, "callback_id"),
		"external_id":      v.externalID,
		"state":            map[string]any{"values": v.state.wire()},
		"hash":             v.hash,
		"clear_on_close":   getBool(v.def, "clear_on_close"),
		"notify_on_close":  getBool(v.def, "notify_on_close"),
		"root_view_id":     v.root,
		"previous_view_id": nullIfEmpty(v.previous),
		"app_id":           s.cfg.AppID, "bot_id": botID,
		"app_installed_team_id": team,
	})
	return out
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (v *viewRec) export() View {
	return View{
		ID: v.id, ExternalID: v.externalID, User: v.user, TriggerID: v.trigger,
		CallbackID: getStr(v.def, "callback_id"), PrivateMetadata: getStr(v.def, "private_metadata"),
		Hash: v.hash, Title: textOf(v.def, "title"), Submit: textOf(v.def, "submit"), Close: textOf(v.def, "close"),
		RootViewID: v.root, PreviousViewID: v.previous,
		NotifyOnClose: getBool(v.def, "notify_on_close"), ClearOnClose: getBool(v.def, "clear_on_close"),
		Blocks: mustJSON(nonNil(v.blocks)), State: mustJSON(map[string]any{"values": v.state.wire()}),
		Errors: maps.Clone(v.errors), Open: v.open, Updates: v.updates,
	}
}

// View returns the view with viewID, open or closed; ok is false when there
// is none.
func (s *Server) View(viewID string) (view View, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.views[viewID]
	if v == nil {
		return View{}, false
	}
	return v.export(), true
}

// OpenViews returns user's open views, the bottom of the stack first; nil
// when none is open.
func (s *Server) OpenViews(user string) []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []View
	for _, v := range s.userViewsLocked(user) {
		out = append(out, v.export())
	}
	return out
}
