package slackfake

// clientState is what a Slack client keeps for one message or modal: the
// current value of every stateful element, by block_id then action_id.
type clientState struct {
	values map[string]map[string]map[string]any
}

// initialState builds the state a client shows for freshly received blocks.
func initialState(blocks []any) *clientState {
	st := &clientState{values: map[string]map[string]map[string]any{}}
	for _, b := range blocks {
		m, ok := asObj(b)
		if !ok {
			continue
		}
		for _, el := range blockElements(m) {
			val, stateful := initialValue(el.m)
			if !stateful {
				continue
			}
			if st.values[el.blockID] == nil {
				st.values[el.blockID] = map[string]map[string]any{}
			}
			st.values[el.blockID][getStr(el.m, "action_id")] = val
		}
	}
	return st
}

// stateFields maps a stateful element type to its state field and the
// element field holding its initial value; plural fields default to [].
var stateFields = map[string][2]string{
	"static_select":              {"selected_option", "initial_option"},
	"external_select":            {"selected_option", "initial_option"},
	"radio_buttons":              {"selected_option", "initial_option"},
	"multi_static_select":        {"selected_options", "initial_options"},
	"multi_external_select":      {"selected_options", "initial_options"},
	"checkboxes":                 {"selected_options", "initial_options"},
	"users_select":               {"selected_user", "initial_user"},
	"multi_users_select":         {"selected_users", "initial_users"},
	"conversations_select":       {"selected_conversation", "initial_conversation"},
	"multi_conversations_select": {"selected_conversations", "initial_conversations"},
	"channels_select":            {"selected_channel", "initial_channel"},
	"multi_channels_select":      {"selected_channels", "initial_channels"},
	"plain_text_input":           {"value", "initial_value"},
	"email_text_input":           {"value", "initial_value"},
	"url_text_input":             {"value", "initial_value"},
	"number_input":               {"value", "initial_value"},
	"datepicker":                 {"selected_date", "initial_date"},
	"timepicker":                 {"selected_time", "initial_time"},
	"datetimepicker":             {"selected_date_time", "initial_date_time"},
	"rich_text_input":            {"rich_text_value", "initial_value"},
	"file_input":                 {"files", ""},
}

func initialValue(el map[string]any) (map[string]any, bool) {
	typ := getStr(el, "type")
	f, ok := stateFields[typ]
	if !ok {
		return nil, false
	}
	var init any
	if f[1] != "" {
		init = cloneJSON(el[f[1]])
	}
	if init == nil && isPlural(f[0]) {
		init = []any{}
	}
	return map[string]any{"type": typ, f[0]: init}, true
}

func isPlural(field string) bool {
	return field == "files" || field[len(field)-1] == 's'
}

// rebase returns the state for updated blocks: blocks whose block_id is
// unchanged keep what the person entered; new block_ids start from their
// initial values (what Slack clients do).
func (st *clientState) rebase(blocks []any) *clientState {
	next := initialState(blocks)
	for bid, acts := range next.values {
		old, kept := st.values[bid]
		if !kept {
			continue
		}
		for aid, val := range acts {
			if o, ok := old[aid]; ok && o["type"] == val["type"] {
				acts[aid] = o
			}
		}
	}
	return next
}

// wire returns a copy of the values for a payload's state.values.
func (st *clientState) wire() map[string]any {
	out := make(map[string]any, len(st.values))
	for bid, acts := range st.values {
		out[bid] = cloneJSON(anyMap(acts))
	}
	return out
}

func anyMap(m map[string]map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (st *clientState) set(blockID, actionID string, val map[string]any) {
	if st.values[blockID] == nil {
		st.values[blockID] = map[string]map[string]any{}
	}
	st.values[blockID][actionID] = val
}

func (st *clientState) get(blockID, actionID string) map[string]any {
	return st.values[blockID][actionID]
}

func msgKey(channel, ts string) string { return "msg:" + channel + "/" + ts }
func ephKey(channel, ts string) string { return "eph:" + channel + "/" + ts }

// stateLocked returns the person's state for a message, creating it from
// the blocks' initial values.
func (s *Server) stateLocked(user, key string, blocks []any) *clientState {
	if s.states[user] == nil {
		s.states[user] = map[string]*clientState{}
	}
	st := s.states[user][key]
	if st == nil {
		st = initialState(blocks)
		s.states[user][key] = st
	}
	return st
}

// rebaseStatesLocked applies a chat.update to every person's state.
func (s *Server) rebaseStatesLocked(key string, blocks []any) {
	for _, byKey := range s.states {
		if st := byKey[key]; st != nil {
			byKey[key] = st.rebase(blocks)
		}
	}
}
