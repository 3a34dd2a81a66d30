package slackfake

import "fmt"

// Block Kit limits, checked the way Slack checks them.
const (
	maxMessageBlocks   = 50
	maxModalBlocks     = 100
	maxIDLen           = 255
	maxSectionText     = 3000
	maxSectionFields   = 10
	maxFieldText       = 2000
	maxHeaderText      = 150
	maxContextElements = 10
	maxActionsElements = 25
	maxModalTitle      = 24
	maxPrivateMetadata = 3000
	maxViewBytes       = 250 * 1024
	maxPostText        = 40000
	maxUpdateText      = 4000
)

// vctx collects Slack-style validation errors: "<what> [json-pointer:/…]".
type vctx struct{ errs []string }

func (v *vctx) add(ptr, format string, args ...any) {
	v.errs = append(v.errs, fmt.Sprintf(format, args...)+" [json-pointer:"+ptr+"]")
}

// validateMessageBlocks checks the blocks of a message.
func validateMessageBlocks(blocks []any) []string {
	v := &vctx{}
	v.blocks("/blocks", blocks, maxMessageBlocks)
	return v.errs
}

func (v *vctx) blocks(ptr string, blocks []any, limit int) {
	if len(blocks) > limit {
		v.add(ptr, "no more than %d items allowed (got %d)", limit, len(blocks))
	}
	seen := map[string]string{}
	for i, b := range blocks {
		bp := ptr + "/" + itoa(i)
		m, ok := asObj(b)
		if !ok {
			v.add(bp, "must provide an object")
			continue
		}
		v.blockID(bp, m, seen)
		v.block(bp, m)
	}
}

func (v *vctx) blockID(bp string, m map[string]any, seen map[string]string) {
	raw, present := m["block_id"]
	if !present {
		return
	}
	id, ok := raw.(string)
	switch {
	case !ok:
		v.add(bp+"/block_id", "must provide a string")
	case id == "":
		v.add(bp+"/block_id", "must be at least 1 character")
	case runeLen(id) > maxIDLen:
		v.add(bp+"/block_id", "must be less than %d characters", maxIDLen+1)
	case seen[id] != "":
		v.add(bp+"/block_id", "duplicate block_id %q, already used at %s", id, seen[id])
	default:
		seen[id] = bp
	}
}

var blockCheckers = map[string]func(v *vctx, bp string, m map[string]any){
	"section":   (*vctx).section,
	"actions":   (*vctx).actions,
	"context":   (*vctx).context,
	"header":    (*vctx).header,
	"divider":   func(*vctx, string, map[string]any) {},
	"input":     (*vctx).input,
	"image":     (*vctx).imageBlock,
	"rich_text": (*vctx).richText,
}

func (v *vctx) block(bp string, m map[string]any) {
	typ, ok := m["type"].(string)
	if !ok {
		v.add(bp, "missing required field: type")
		return
	}
	check, known := blockCheckers[typ]
	if !known {
		v.add(bp+"/type", "unsupported block type %q (known: section, actions, context, header, divider, input, image, rich_text)", typ)
		return
	}
	check(v, bp, m)
}

func (v *vctx) section(bp string, m map[string]any) {
	_, hasText := m["text"]
	_, hasFields := m["fields"]
	if !hasText && !hasFields {
		v.add(bp, "missing required field: text (a section needs text or fields)")
	}
	if hasText {
		v.text(bp+"/text", m["text"], false, maxSectionText)
	}
	if hasFields {
		v.fields(bp+"/fields", m["fields"])
	}
	if acc, ok := m["accessory"]; ok {
		v.element(bp+"/accessory", acc, accessoryTypes, "a section accessory", nil)
	}
}

func (v *vctx) fields(ptr string, raw any) {
	fields, ok := asArr(raw)
	if !ok {
		v.add(ptr, "must provide an array")
		return
	}
	if len(fields) == 0 {
		v.add(ptr, "must provide at least 1 item")
	}
	if len(fields) > maxSectionFields {
		v.add(ptr, "no more than %d items allowed (got %d)", maxSectionFields, len(fields))
	}
	for i, f := range fields {
		v.text(ptr+"/"+itoa(i), f, false, maxFieldText)
	}
}

func (v *vctx) actions(bp string, m map[string]any) {
	els, ok := v.elementList(bp, m, maxActionsElements)
	if !ok {
		return
	}
	ids := map[string]string{}
	for i, el := range els {
		v.element(bp+"/elements/"+itoa(i), el, actionsTypes, "an actions block", ids)
	}
}

func (v *vctx) elementList(bp string, m map[string]any, limit int) ([]any, bool) {
	raw, present := m["elements"]
	if !present {
		v.add(bp, "missing required field: elements")
		return nil, false
	}
	els, ok := asArr(raw)
	if !ok {
		v.add(bp+"/elements", "must provide an array")
		return nil, false
	}
	if len(els) == 0 {
		v.add(bp+"/elements", "must provide at least 1 item")
	}
	if len(els) > limit {
		v.add(bp+"/elements", "no more than %d items allowed (got %d)", limit, len(els))
	}
	return els, true
}

func (v *vctx) context(bp string, m map[string]any) {
	els, ok := v.elementList(bp, m, maxContextElements)
	if !ok {
		return
	}
	for i, el := range els {
		ep := bp + "/elements/" + itoa(i)
		if o, ok := asObj(el); ok && getStr(o, "type") == "image" {
			v.imageElement(ep, o)
			continue
		}
		v.text(ep, el, false, maxSectionText)
	}
}

func (v *vctx) header(bp string, m map[string]any) {
	if v.required(bp, m, "text") {
		v.text(bp+"/text", m["text"], true, maxHeaderText)
	}
}

func (v *vctx) input(bp string, m map[string]any) {
	if v.required(bp, m, "label") {
		v.text(bp+"/label", m["label"], true, 2000)
	}
	if _, ok := m["hint"]; ok {
		v.text(bp+"/hint", m["hint"], true, 2000)
	}
	if _, many := m["elements"]; many {
		v.add(bp+"/elements", `an input block takes exactly one element, in "element"`)
	}
	if v.required(bp, m, "element") {
		if _, isList := asArr(m["element"]); isList {
			v.add(bp+"/element", "must provide an object (an input block takes exactly one element)")
			return
		}
		v.element(bp+"/element", m["element"], inputTypes, "an input block", nil)
	}
}

func (v *vctx) imageBlock(bp string, m map[string]any) {
	v.imageElement(bp, m)
	if _, ok := m["title"]; ok {
		v.text(bp+"/title", m["title"], true, 2000)
	}
}

func (v *vctx) imageElement(ptr string, m map[string]any) {
	_, hasURL := m["image_url"]
	_, hasFile := m["slack_file"]
	if !hasURL && !hasFile {
		v.add(ptr, "missing required field: image_url (or slack_file)")
	}
	v.maxStr(ptr, m, "image_url", 3000)
	if v.required(ptr, m, "alt_text") {
		v.maxStr(ptr, m, "alt_text", 2000)
	}
}

func (v *vctx) richText(bp string, m map[string]any) {
	if v.required(bp, m, "elements") {
		if _, ok := asArr(m["elements"]); !ok {
			v.add(bp+"/elements", "must provide an array")
		}
	}
}

// required reports whether key is present, adding an error when it is not.
func (v *vctx) required(ptr string, m map[string]any, key string) bool {
	if _, ok := m[key]; ok {
		return true
	}
	v.add(ptr, "missing required field: %s", key)
	return false
}

// maxStr checks an optional string field.
func (v *vctx) maxStr(ptr string, m map[string]any, key string, limit int) {
	raw, present := m[key]
	if !present {
		return
	}
	s, ok := raw.(string)
	if !ok {
		v.add(ptr+"/"+key, "must provide a string")
		return
	}
	if runeLen(s) > limit {
		v.add(ptr+"/"+key, "must be less than %d characters (got %d)", limit+1, runeLen(s))
	}
}

// text checks a text object; plainOnly requires plain_text.
func (v *vctx) text(ptr string, raw any, plainOnly bool, limit int) {
	m, ok := asObj(raw)
	if !ok {
		v.add(ptr, "must provide an object (a text object, not a bare string)")
		return
	}
	switch typ := getStr(m, "type"); {
	case plainOnly && typ != "plain_text":
		v.add(ptr+"/type", `must be "plain_text" (got %q)`, typ)
	case typ != "plain_text" && typ != "mrkdwn":
		v.add(ptr+"/type", `must be "plain_text" or "mrkdwn" (got %q)`, typ)
	case typ == "mrkdwn" && m["emoji"] != nil:
		v.add(ptr+"/emoji", `"emoji" is only allowed on plain_text`)
	}
	t, ok := m["text"].(string)
	switch {
	case !ok:
		v.add(ptr+"/text", "must provide a string")
	case t == "":
		v.add(ptr+"/text", "must be at least 1 character")
	case runeLen(t) > limit:
		v.add(ptr+"/text", "must be less than %d characters (got %d)", limit+1, runeLen(t))
	}
}
