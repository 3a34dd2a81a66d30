package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
)

// The App Home tab: views.publish (Tier 4, per workspace), the home view
// each person sees, and the app_home_opened event a person's opening of
// the tab sends over Socket Mode.

// EventHomePublished: views.publish changed a person's Home tab.
const EventHomePublished EventType = "home_published"

// viewsPublish implements views.publish: the view must be a valid home
// view; the call is limited per workspace (ViewsPublishPerMinute, 429
// with Retry-After above it); hash, when given, must be the current
// view's.
func (s *Server) viewsPublish(r *apiRequest) reply {
	u := s.ws.users[r.str("user_id")]
	if u == nil {
		return errReply("user_not_found")
	}
	v, err := decodeJSON([]byte(r.str("view")))
	def, ok := asObj(v)
	if r.str("view") == "" || err != nil || !ok {
		return errReplyMsgs("invalid_arguments", []string{"[ERROR] missing or malformed `view`: must provide a JSON object"})
	}
	errs, tooLarge := validateHome(def)
	switch {
	case tooLarge:
		return errReply("view_too_large")
	case len(errs) > 0:
		return errReplyMsgs("invalid_arguments", prefixed(errs))
	}
	home := s.homes[u.ID]
	if h := r.str("hash"); h != "" && (home == nil || h != home.hash) {
		return errReply("hash_conflict")
	}
	if rep, ok := s.tierLocked("views.publish", s.cfg.ViewsPublishPerMinute); !ok {
		return rep
	}
	def["blocks"] = normalizeBlocks(getArr(def, "blocks"))
	s.viewSeq++
	if home == nil {
		home = &viewRec{id: randID("V", 10), user: u.ID, open: true, home: true}
		home.root = home.id
		home.setDefinition(def, s.now())
		home.state = initialState(home.blocks)
		s.homes[u.ID] = home
	} else {
		home.setDefinition(def, s.now())
		home.state = home.state.rebase(home.blocks)
		home.updates++
	}
	home.seq = s.viewSeq
	s.emitLocked(Event{Type: EventHomePublished, User: u.ID, ViewID: home.id})
	return okReply(map[string]any{"view": s.wireView(home)})
}

// validateHome checks a view for views.publish: type "home", at most 100
// valid blocks, no title, submit or close (a Home tab has none), the
// modal's limits on its ids and metadata.
func validateHome(view map[string]any) (errs []string, tooLarge bool) {
	if len(mustJSON(view)) > maxViewBytes {
		return nil, true
	}
	v := &vctx{}
	if t := getStr(view, "type"); t != "home" {
		v.add("/view/type", `must be "home" (got %q)`, t)
	}
	for _, k := range []string{"title", "submit", "close"} {
		if _, ok := view[k]; ok {
			v.add("/view/"+k, "is not allowed in a home view")
		}
	}
	v.maxStr("/view", view, "private_metadata", maxPrivateMetadata)
	v.maxStr("/view", view, "callback_id", maxIDLen)
	v.maxStr("/view", view, "external_id", maxIDLen)
	if !v.required("/view", view, "blocks") {
		return v.errs, false
	}
	blocks, ok := asArr(view["blocks"])
	if !ok {
		v.add("/view/blocks", "must provide an array")
		return v.errs, false
	}
	v.blocks("/view/blocks", blocks, maxModalBlocks)
	return v.errs, false
}

// Home returns the Home tab the app last published for user; ok is false
// when it published none.
func (s *Server) Home(user string) (view View, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.homes[user]
	if h == nil {
		return View{}, false
	}
	return h.export(), true
}

// OpenHome is the person opening the app's Home tab: Slack sends the
// app_home_opened event (in an events_api envelope, to one live socket)
// and waits for its ack. Errors as for Deliver.
func (p *Person) OpenHome(ctx context.Context) error {
	p.s.mu.Lock()
	if _, ok := p.s.ws.users[p.id]; !ok {
		p.s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownUser, p.id)
	}
	ev := map[string]any{
		"type": "app_home_opened", "user": p.id, "channel": DMChannelID(p.id), "tab": "home",
		"event_ts": p.s.actionTSLocked(),
	}
	if h := p.s.homes[p.id]; h != nil {
		ev["view"] = p.s.wireView(h)
	}
	t := p.s.teamOfUserLocked(p.id)
	orgWide := p.s.orgWideFor(t)
	auth := map[string]any{"team_id": t.id, "user_id": t.botUser, "is_bot": true, "is_enterprise_install": orgWide}
	payload := map[string]any{
		"token": verificationToken, "team_id": t.id, "api_app_id": p.s.cfg.AppID,
		"event": ev, "type": "event_callback", "event_id": randID("Ev", 10), "event_time": p.s.now().Unix(),
		"authorizations":        []any{auth},
		"is_enterprise_install": orgWide,
	}
	if t.enterprise != "" {
		payload["enterprise_id"], auth["enterprise_id"] = t.enterprise, t.enterprise
	}
	p.s.mu.Unlock()
	_, err := p.s.deliver(ctx, "events_api", payload, false)
	return err
}

// ClickInHome presses a button of the person's Home tab, like Click: the
// block_actions payload has a view container and the home view.
func (p *Person) ClickInHome(ctx context.Context, find Finder) (json.RawMessage, error) {
	return p.act(ctx, func(u *user) (map[string]any, error) {
		h := p.s.homes[p.id]
		if h == nil {
			return nil, fmt.Errorf("%w: no Home tab published for %s", ErrNotFound, p.id)
		}
		return p.clickLocked(u, &surface{view: h, blocks: h.blocks, state: h.state}, find)
	})
}
