package slackfake

const maxViewStack = 3

func (s *Server) viewsOpen(r *apiRequest) reply {
	t, rep := s.checkTriggerLocked(r.str("trigger_id"))
	if rep != nil {
		return *rep
	}
	def, rep := parseView(r.str("view"))
	if rep != nil {
		return *rep
	}
	if rep := s.checkExternalIDLocked(def, nil); rep != nil {
		return *rep
	}
	t.used = true
	for _, old := range s.userViewsLocked(t.user) {
		s.closeStackLocked(old.root) // a new modal replaces the person's current one
	}
	v := s.newViewLocked(t.user, r.str("trigger_id"), def, nil)
	return okReply(map[string]any{"view": s.wireView(v)})
}

func (s *Server) viewsPush(r *apiRequest) reply {
	t, rep := s.checkTriggerLocked(r.str("trigger_id"))
	if rep != nil {
		return *rep
	}
	def, rep := parseView(r.str("view"))
	if rep != nil {
		return *rep
	}
	open := s.userViewsLocked(t.user)
	if len(open) == 0 {
		return errReplyMsgs("invalid_arguments", []string{"[ERROR] views.push needs an open modal to push onto"})
	}
	if len(open) >= maxViewStack {
		return errReply("push_limit_reached")
	}
	if rep := s.checkExternalIDLocked(def, nil); rep != nil {
		return *rep
	}
	t.used = true
	v := s.newViewLocked(t.user, r.str("trigger_id"), def, open[len(open)-1])
	return okReply(map[string]any{"view": s.wireView(v)})
}

func (s *Server) viewsUpdate(r *apiRequest) reply {
	v := s.findViewLocked(r.str("view_id"), r.str("external_id"))
	if v == nil {
		return errReply("not_found")
	}
	if h := r.str("hash"); h != "" && h != v.hash {
		return errReply("hash_conflict")
	}
	def, rep := parseView(r.str("view"))
	if rep != nil {
		return *rep
	}
	if rep := s.checkExternalIDLocked(def, v); rep != nil {
		return *rep
	}
	s.updateViewLocked(v, def)
	return okReply(map[string]any{"view": s.wireView(v)})
}

func (s *Server) findViewLocked(id, externalID string) *viewRec {
	if id == "" && externalID == "" {
		return nil
	}
	for _, v := range s.views {
		if v.open && ((id != "" && v.id == id) || (id == "" && v.externalID == externalID)) {
			return v
		}
	}
	return nil
}

// checkExternalIDLocked refuses an external_id used by another open view.
func (s *Server) checkExternalIDLocked(def map[string]any, self *viewRec) *reply {
	ext := getStr(def, "external_id")
	if ext == "" {
		return nil
	}
	if other := s.findViewLocked("", ext); other != nil && other != self {
		rep := errReply("duplicate_external_id")
		return &rep
	}
	return nil
}
