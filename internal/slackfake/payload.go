package slackfake

import "fmt"

// verificationToken is the deprecated "token" field of payloads.
const verificationToken = "fakeVerificationToken"

func (s *Server) wireUserRef(u *user) map[string]any {
	return map[string]any{"id": u.ID, "username": u.Name, "name": u.Name, "team_id": s.teamIDLocked(u.Team)}
}

func (s *Server) wireTeam(t *team) map[string]any {
	return map[string]any{"id": t.id, "domain": teamDomain}
}

// basePayload has the fields every interactive payload carries.
func (s *Server) basePayload(typ string, u *user) map[string]any {
	t := s.teamOfUserLocked(u.ID)
	return map[string]any{
		"type":                  typ,
		"user":                  s.wireUserRef(u),
		"api_app_id":            s.cfg.AppID,
		"token":                 verificationToken,
		"team":                  s.wireTeam(t),
		"enterprise":            s.wireEnterprise(t),
		"is_enterprise_install": s.orgWideFor(t),
	}
}

func (s *Server) actionTSLocked() string {
	us := s.now().UnixMicro()
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

// surface is a message, an ephemeral message or a modal as one person sees it.
type surface struct {
	channel   *channel
	msg       Message // message or ephemeral (Blocks unused)
	ephemeral bool
	view      *viewRec
	blocks    []any
	state     *clientState
}

// blockActionsLocked builds a block_actions payload for one action, with a
// fresh trigger_id and the whole surface state.
func (s *Server) blockActionsLocked(u *user, surf *surface, action map[string]any) map[string]any {
	p := s.basePayload("block_actions", u)
	p["trigger_id"] = s.newTriggerLocked(u.ID)
	p["state"] = map[string]any{"values": surf.state.wire()}
	p["actions"] = []any{action}
	if surf.view != nil {
		p["container"] = map[string]any{"type": "view", "view_id": surf.view.id}
		p["view"] = s.wireView(surf.view)
		return p
	}
	container := map[string]any{
		"type": "message", "message_ts": surf.msg.TS, "channel_id": surf.channel.ID, "is_ephemeral": surf.ephemeral,
	}
	if surf.msg.ThreadTS != "" {
		container["thread_ts"] = surf.msg.ThreadTS
	}
	p["container"] = container
	p["channel"] = map[string]any{"id": surf.channel.ID, "name": surf.channel.displayName()}
	p["response_url"] = s.newResponseURLLocked(responseTarget{channel: surf.channel.ID, ts: surf.msg.TS, user: u.ID, ephemeral: surf.ephemeral})
	if !surf.ephemeral {
		p["message"] = s.wireMessage(surf.msg, surf.blocks)
	}
	return p
}

func (s *Server) viewSubmissionLocked(u *user, v *viewRec) map[string]any {
	p := s.basePayload("view_submission", u)
	p["trigger_id"] = s.newTriggerLocked(u.ID)
	p["view"] = s.wireView(v)
	p["response_urls"] = []any{}
	return p
}

func (s *Server) viewClosedLocked(u *user, v *viewRec, cleared bool) map[string]any {
	p := s.basePayload("view_closed", u)
	p["view"] = s.wireView(v)
	p["is_cleared"] = cleared
	return p
}

// actionBase has the fields of every actions[] entry.
func (s *Server) actionBaseLocked(el elemRef) map[string]any {
	a := map[string]any{
		"type":      getStr(el.m, "type"),
		"action_id": getStr(el.m, "action_id"),
		"block_id":  el.blockID,
		"action_ts": s.actionTSLocked(),
	}
	if ph, ok := el.m["placeholder"]; ok {
		a["placeholder"] = cloneJSON(ph)
	}
	return a
}
