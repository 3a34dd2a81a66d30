package slackfake

import "slices"

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

var (
	selectTypes = []string{
		"static_select", "external_select", "users_select", "conversations_select", "channels_select",
		"multi_static_select", "multi_external_select", "multi_users_select",
		"multi_conversations_select", "multi_channels_select",
	}
	pickerTypes    = []string{"checkboxes", "radio_buttons", "datepicker", "timepicker", "datetimepicker"}
	actionsTypes   = set(append(append([]string{"button", "overflow", "workflow_button", "rich_text_input"}, selectTypes...), pickerTypes...)...)
	accessoryTypes = set(append(append([]string{"button", "overflow", "image", "workflow_button"}, selectTypes...), pickerTypes...)...)
	inputTypes     = set(append(append([]string{
		"plain_text_input", "email_text_input", "url_text_input", "number_input",
		"file_input", "rich_text_input",
	}, selectTypes...), pickerTypes...)...)
)

var elementCheckers = map[string]func(v *vctx, ptr string, m map[string]any){
	"button":              (*vctx).button,
	"static_select":       (*vctx).staticSelect,
	"multi_static_select": (*vctx).staticSelect,
	"checkboxes":          (*vctx).choiceList,
	"radio_buttons":       (*vctx).choiceList,
	"overflow":            (*vctx).overflow,
	"plain_text_input":    (*vctx).plainTextInput,
	"image":               (*vctx).imageElement,
}

// element checks an element; ids (when not nil) enforces action_id
// uniqueness within the block.
func (v *vctx) element(ptr string, raw any, allowed map[string]bool, where string, ids map[string]string) {
	m, ok := asObj(raw)
	if !ok {
		v.add(ptr, "must provide an object")
		return
	}
	typ, ok := m["type"].(string)
	if !ok {
		v.add(ptr, "missing required field: type")
		return
	}
	if !allowed[typ] {
		v.add(ptr+"/type", "element type %q is not allowed in %s", typ, where)
		return
	}
	v.actionID(ptr, m, ids)
	if c, ok := m["confirm"]; ok {
		v.confirm(ptr+"/confirm", c)
	}
	if _, ok := m["placeholder"]; ok {
		v.text(ptr+"/placeholder", m["placeholder"], true, 150)
	}
	if check := elementCheckers[typ]; check != nil {
		check(v, ptr, m)
	}
}

func (v *vctx) actionID(ptr string, m map[string]any, ids map[string]string) {
	raw, present := m["action_id"]
	if !present {
		return
	}
	id, ok := raw.(string)
	switch {
	case !ok:
		v.add(ptr+"/action_id", "must provide a string")
	case id == "":
		v.add(ptr+"/action_id", "must be at least 1 character")
	case runeLen(id) > maxIDLen:
		v.add(ptr+"/action_id", "must be less than %d characters", maxIDLen+1)
	case ids != nil && ids[id] != "":
		v.add(ptr+"/action_id", "duplicate action_id %q in this block, already used at %s", id, ids[id])
	case ids != nil:
		ids[id] = ptr
	}
}

func (v *vctx) button(ptr string, m map[string]any) {
	if v.required(ptr, m, "text") {
		v.text(ptr+"/text", m["text"], true, 75)
	}
	v.maxStr(ptr, m, "value", 2000)
	v.maxStr(ptr, m, "url", 3000)
	v.maxStr(ptr, m, "accessibility_label", 75)
	v.style(ptr, m)
}

func (v *vctx) style(ptr string, m map[string]any) {
	raw, present := m["style"]
	if !present {
		return
	}
	if s, _ := raw.(string); s != "primary" && s != "danger" {
		v.add(ptr+"/style", `must be "primary" or "danger" (got %s); omit it for the default style`, mustJSON(raw))
	}
}

func (v *vctx) confirm(ptr string, raw any) {
	m, ok := asObj(raw)
	if !ok {
		v.add(ptr, "must provide an object")
		return
	}
	if v.required(ptr, m, "title") {
		v.text(ptr+"/title", m["title"], true, 100)
	}
	if v.required(ptr, m, "text") {
		v.text(ptr+"/text", m["text"], false, 300)
	}
	if v.required(ptr, m, "confirm") {
		v.text(ptr+"/confirm", m["confirm"], true, 30)
	}
	if v.required(ptr, m, "deny") {
		v.text(ptr+"/deny", m["deny"], true, 30)
	}
	v.style(ptr, m)
}

func (v *vctx) staticSelect(ptr string, m map[string]any) {
	opts := v.selectOptions(ptr, m)
	multi := getStr(m, "type") == "multi_static_select"
	if init, ok := m["initial_option"]; ok {
		if multi {
			v.add(ptr+"/initial_option", "multi_static_select takes initial_options (an array), not initial_option")
		} else {
			v.initialOption(ptr+"/initial_option", init, opts)
		}
	}
	if init, ok := m["initial_options"]; ok {
		if !multi {
			v.add(ptr+"/initial_options", "static_select takes initial_option, not initial_options")
		} else {
			v.initialOptions(ptr+"/initial_options", init, opts)
		}
	}
	if n, ok := getInt(m, "max_selected_items"); multi && m["max_selected_items"] != nil && (!ok || n < 1) {
		v.add(ptr+"/max_selected_items", "must be an integer of at least 1")
	}
}

// selectOptions checks options or option_groups and returns every option.
func (v *vctx) selectOptions(ptr string, m map[string]any) []map[string]any {
	_, hasOpts := m["options"]
	_, hasGroups := m["option_groups"]
	switch {
	case hasOpts && hasGroups:
		v.add(ptr, "must provide either options or option_groups, not both")
	case hasOpts:
		return v.optionList(ptr+"/options", m["options"], 100, true, 75)
	case hasGroups:
		return v.optionGroups(ptr+"/option_groups", m["option_groups"])
	default:
		v.add(ptr, "missing required field: options (or option_groups)")
	}
	return nil
}

func (v *vctx) optionGroups(ptr string, raw any) []map[string]any {
	groups, ok := asArr(raw)
	if !ok {
		v.add(ptr, "must provide an array")
		return nil
	}
	if len(groups) > 100 {
		v.add(ptr, "no more than 100 items allowed (got %d)", len(groups))
	}
	var all []map[string]any
	for i, g := range groups {
		gp := ptr + "/" + itoa(i)
		gm, ok := asObj(g)
		if !ok {
			v.add(gp, "must provide an object")
			continue
		}
		if v.required(gp, gm, "label") {
			v.text(gp+"/label", gm["label"], true, 75)
		}
		if v.required(gp, gm, "options") {
			all = append(all, v.optionList(gp+"/options", gm["options"], 100, true, 75)...)
		}
	}
	return all
}

func (v *vctx) optionList(ptr string, raw any, limit int, plainOnly bool, textMax int) []map[string]any {
	list, ok := asArr(raw)
	if !ok {
		v.add(ptr, "must provide an array")
		return nil
	}
	if len(list) == 0 {
		v.add(ptr, "must provide at least 1 item")
	}
	if len(list) > limit {
		v.add(ptr, "no more than %d items allowed (got %d)", limit, len(list))
	}
	var opts []map[string]any
	for i, o := range list {
		if om := v.option(ptr+"/"+itoa(i), o, plainOnly, textMax); om != nil {
			opts = append(opts, om)
		}
	}
	return opts
}

func (v *vctx) option(ptr string, raw any, plainOnly bool, textMax int) map[string]any {
	m, ok := asObj(raw)
	if !ok {
		v.add(ptr, "must provide an object")
		return nil
	}
	if v.required(ptr, m, "text") {
		v.text(ptr+"/text", m["text"], plainOnly, textMax)
	}
	if v.required(ptr, m, "value") {
		v.maxStr(ptr, m, "value", 150)
	}
	if _, ok := m["description"]; ok {
		v.text(ptr+"/description", m["description"], plainOnly, 75)
	}
	v.maxStr(ptr, m, "url", 3000)
	return m
}

// sameOption reports whether two options have the same value and text.
func sameOption(a, b map[string]any) bool {
	return getStr(a, "value") == getStr(b, "value") && textOf(a, "text") == textOf(b, "text")
}

func (v *vctx) initialOption(ptr string, raw any, opts []map[string]any) {
	m, ok := asObj(raw)
	if !ok {
		v.add(ptr, "must provide an object")
		return
	}
	for _, o := range opts {
		if sameOption(m, o) {
			return
		}
	}
	val, txt := getStr(m, "value"), textOf(m, "text")
	for _, o := range opts {
		if getStr(o, "value") == val {
			v.add(ptr, "must exactly match one of the options: value %q is there but with text %q, not %q", val, textOf(o, "text"), txt)
			return
		}
	}
	v.add(ptr, "must exactly match one of the options: no option has value %q (text %q)", val, txt)
}

func (v *vctx) initialOptions(ptr string, raw any, opts []map[string]any) {
	list, ok := asArr(raw)
	if !ok {
		v.add(ptr, "must provide an array")
		return
	}
	for i, o := range list {
		v.initialOption(ptr+"/"+itoa(i), o, opts)
	}
}

func (v *vctx) choiceList(ptr string, m map[string]any) {
	if !v.required(ptr, m, "options") {
		return
	}
	opts := v.optionList(ptr+"/options", m["options"], 10, false, 75)
	if init, ok := m["initial_option"]; ok {
		v.initialOption(ptr+"/initial_option", init, opts)
	}
	if init, ok := m["initial_options"]; ok {
		v.initialOptions(ptr+"/initial_options", init, opts)
	}
}

func (v *vctx) overflow(ptr string, m map[string]any) {
	if !v.required(ptr, m, "options") {
		return
	}
	opts, ok := asArr(m["options"])
	if ok && (len(opts) < 2 || len(opts) > 5) {
		v.add(ptr+"/options", "must provide between 2 and 5 items (got %d)", len(opts))
	}
	v.optionList(ptr+"/options", m["options"], 5, true, 75)
}

func (v *vctx) plainTextInput(ptr string, m map[string]any) {
	maxLen, hasMax := getInt(m, "max_length")
	if _, present := m["max_length"]; present && (!hasMax || maxLen < 1 || maxLen > 3000) {
		v.add(ptr+"/max_length", "must be an integer between 1 and 3000")
	}
	minLen, hasMin := getInt(m, "min_length")
	if _, present := m["min_length"]; present && (!hasMin || minLen < 0 || minLen > 3000) {
		v.add(ptr+"/min_length", "must be an integer between 0 and 3000")
	}
	if hasMin && hasMax && minLen > maxLen {
		v.add(ptr+"/min_length", "must not be greater than max_length (%d > %d)", minLen, maxLen)
	}
	v.maxStr(ptr, m, "initial_value", 3000)
	if iv := getStr(m, "initial_value"); hasMax && int64(runeLen(iv)) > maxLen {
		v.add(ptr+"/initial_value", "must not be longer than max_length %d (got %d)", maxLen, runeLen(iv))
	}
}

// validateModal checks a modal view for views.open/push/update and for
// response_action update/push. It returns invalid_arguments messages, or
// tooLarge when the view exceeds 250 kB.
func validateModal(view map[string]any) (errs []string, tooLarge bool) {
	if len(mustJSON(view)) > maxViewBytes {
		return nil, true
	}
	v := &vctx{}
	if t := getStr(view, "type"); t != "modal" {
		v.add("/view/type", `must be "modal" (got %q)`, t)
	}
	if v.required("/view", view, "title") {
		v.text("/view/title", view["title"], true, maxModalTitle)
	}
	for _, k := range []string{"submit", "close"} {
		if _, ok := view[k]; ok {
			v.text("/view/"+k, view[k], true, maxModalTitle)
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
	if _, hasSubmit := view["submit"]; !hasSubmit && slices.ContainsFunc(blocks, isInputBlock) {
		v.add("/view", "missing required field: submit (a modal with input blocks needs a submit button)")
	}
	return v.errs, false
}

func isInputBlock(b any) bool {
	m, _ := asObj(b)
	return getStr(m, "type") == "input"
}
