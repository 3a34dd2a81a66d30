package slackfake

import (
	"encoding/json"
	"io"
	"net/http"
)

// responseTarget is what a response_url acts on.
type responseTarget struct {
	channel, ts, user string
	ephemeral         bool
	uses              int
}

const maxResponseURLUses = 5

func (s *Server) newResponseURLLocked(t responseTarget) string {
	id := s.cfg.TeamID + "/" + randHex(12)
	s.responses[id] = t
	return s.base + "/response/" + id
}

// serveResponseURL handles a POST to a response_url: replace_original,
// delete_original, or a new in_channel / ephemeral message.
func (s *Server) serveResponseURL(w http.ResponseWriter, r *http.Request, id string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	req := &apiRequest{method: "response_url", params: map[string]string{}}
	bad := ""
	if err != nil {
		bad = "invalid_json"
	} else {
		bad = parseJSONParams(body, req.params)
	}
	s.mu.Lock()
	rep := s.responseLocked(id, req, bad)
	s.calls = append(s.calls, Call{Method: req.method, Params: req.params, At: s.now(), Error: rep.errorCode()})
	s.notifyLocked()
	s.mu.Unlock()
	if rep.status == 0 {
		rep.status = http.StatusOK
	}
	writeReply(w, rep)
}

func (s *Server) responseLocked(id string, req *apiRequest, bad string) reply {
	t, ok := s.responses[id]
	switch {
	case !ok:
		return reply{status: http.StatusNotFound, body: map[string]any{"ok": false, "error": "expired_url"}}
	case t.uses >= maxResponseURLUses:
		return reply{status: http.StatusNotFound, body: map[string]any{"ok": false, "error": "used_url"}}
	case bad != "":
		return errReply(bad)
	}
	t.uses++
	s.responses[id] = t
	p := req.params
	call := &apiRequest{method: req.method, params: map[string]string{
		"channel": t.channel, "text": p["text"], "blocks": p["blocks"], "thread_ts": p["thread_ts"],
	}}
	switch {
	case p["delete_original"] == "true":
		return s.deleteOriginalLocked(t)
	case p["replace_original"] == "true" && t.ephemeral:
		return s.replaceEphemeralLocked(t, call)
	case p["replace_original"] == "true":
		call.params["ts"] = t.ts
		call.params["blocks"] = cmpOr(p["blocks"], "[]")
		return s.chatUpdate(call)
	case p["response_type"] == "in_channel":
		return s.chatPostMessage(call)
	default:
		call.params["user"] = t.user
		return s.chatPostEphemeral(call)
	}
}

func (s *Server) deleteOriginalLocked(t responseTarget) reply {
	if t.ephemeral {
		return okReply(nil)
	}
	m := s.findMsgLocked(t.channel, t.ts)
	if m == nil {
		return errReply("message_not_found")
	}
	m.Deleted = true
	s.emitLocked(Event{Type: EventMessageDeleted, Channel: m.Channel, TS: m.TS})
	return okReply(nil)
}

func (s *Server) replaceEphemeralLocked(t responseTarget, call *apiRequest) reply {
	blocks, _, rep := parseBlocksParam(call)
	if rep != nil {
		return *rep
	}
	for i := range s.ephemerals {
		e := &s.ephemerals[i]
		if e.User == t.user && e.TS == t.ts {
			e.Text, e.Blocks = call.str("text"), json.RawMessage(mustJSON(nonNil(blocks)))
			s.rebaseStatesLocked(ephKey(e.Channel, e.TS), blocks)
			s.emitLocked(Event{Type: EventEphemeral, Channel: e.Channel, TS: e.TS, User: e.User})
			return okReply(nil)
		}
	}
	return errReply("message_not_found")
}
