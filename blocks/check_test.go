package blocks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/slack-go/slack"
)

// This file holds the checks every rendered message and modal must pass:
// the vendored Block Kit JSON Schema, and the limits the schema does not
// check (block counts, duplicate ids, text lengths counted both in runes and
// in UTF-16 units, initial options among the options, escaping).

// schemaPath is the vendored schema (see testdata/blockkit/README.md); it is
// part of the repository, so a missing file fails the test instead of
// quietly skipping every schema check.
var schemaPath = filepath.Join("testdata", "blockkit", "slack-block-kit.schema.json")

const schemaID = "https://tightknit.com/schemas/slack-block-kit.schema.json"

var schemas struct {
	once         sync.Once
	blocks, view *jsonschema.Schema
	err          error
}

// loadSchemas compiles the schema once; a missing or broken schema fails the
// test.
func loadSchemas(t testing.TB) (blocks, view *jsonschema.Schema) {
	t.Helper()
	schemas.once.Do(func() {
		f, err := os.Open(schemaPath)
		if err != nil {
			schemas.err = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemas.err = err
			return
		}
		c := jsonschema.NewCompiler()
		if schemas.err = c.AddResource(schemaID, doc); schemas.err != nil {
			return
		}
		if schemas.blocks, schemas.err = c.Compile(schemaID); schemas.err != nil {
			return
		}
		schemas.view, schemas.err = c.Compile(schemaID + "#/$defs/modal_view")
	})
	if schemas.err != nil {
		t.Fatalf("Block Kit schema %s: %v", schemaPath, schemas.err)
	}
	return schemas.blocks, schemas.view
}

func validateSchema(s *jsonschema.Schema, raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// checker collects problems of one rendered surface.
type checker struct {
	where    string
	problems []string
}

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, c.where+": "+fmt.Sprintf(format, args...))
}

func utf16Len(s string) int { return textLen(s) }

// length checks 1 <= len <= max in both runes and UTF-16 units.
func (c *checker) length(path, s string, min, max int) {
	if n := utf8.RuneCountInString(s); n < min || n > max {
		c.addf("%s: %d runes, want %d..%d", path, n, min, max)
	} else if n := utf16Len(s); n > max {
		c.addf("%s: %d UTF-16 units, want <= %d", path, n, max)
	}
}

func (c *checker) text(path string, v any, max int, wantType string) {
	o, ok := v.(map[string]any)
	if !ok {
		c.addf("%s: not a text object", path)
		return
	}
	typ, _ := o["type"].(string)
	if wantType != "" && typ != wantType || typ != "plain_text" && typ != "mrkdwn" {
		c.addf("%s: type %q", path, typ)
	}
	s, _ := o["text"].(string)
	c.length(path+".text", s, 1, max)
	if strings.TrimSpace(s) == "" {
		c.addf("%s: blank text", path)
	}
	if typ == "mrkdwn" {
		if err := checkEscaped(s); err != nil {
			c.addf("%s: %v", path, err)
		}
		if o["verbatim"] != true {
			c.addf("%s: mrkdwn without verbatim", path)
		}
	}
}

func (c *checker) id(path string, v any) string {
	s, _ := v.(string)
	c.length(path, s, 1, 255)
	return s
}

// blocks checks a blocks array: count, unique block ids, every block.
func (c *checker) blocks(bs []any, max int, interactive bool) {
	if len(bs) == 0 || len(bs) > max {
		c.addf("%d blocks, want 1..%d", len(bs), max)
	}
	seen := map[string]bool{}
	for i, b := range bs {
		o, _ := b.(map[string]any)
		path := fmt.Sprintf("blocks[%d]", i)
		id := c.id(path+".block_id", o["block_id"])
		if seen[id] {
			c.addf("%s: duplicate block_id %q", path, id)
		}
		seen[id] = true
		c.block(path, o, interactive)
	}
}

func (c *checker) block(path string, o map[string]any, interactive bool) {
	switch o["type"] {
	case "section":
		c.text(path+".text", o["text"], 3000, "")
		if acc, ok := o["accessory"].(map[string]any); ok {
			if !interactive {
				c.addf("%s: accessory in a message without controls", path)
			}
			c.element(path+".accessory", acc, map[string]bool{})
		}
	case "context":
		els, _ := o["elements"].([]any)
		if len(els) == 0 || len(els) > 10 {
			c.addf("%s: %d context elements", path, len(els))
		}
		for j, e := range els {
			c.text(fmt.Sprintf("%s.elements[%d]", path, j), e, 3000, "")
		}
	case "actions":
		if !interactive {
			c.addf("%s: actions block in a message without controls", path)
		}
		els, _ := o["elements"].([]any)
		if len(els) == 0 || len(els) > 25 {
			c.addf("%s: %d action elements", path, len(els))
		}
		ids := map[string]bool{}
		for j, e := range els {
			m, _ := e.(map[string]any)
			c.element(fmt.Sprintf("%s.elements[%d]", path, j), m, ids)
		}
	case "input":
		c.text(path+".label", o["label"], 2000, "plain_text")
		el, _ := o["element"].(map[string]any)
		c.input(path+".element", el)
	case "divider":
	default:
		c.addf("%s: unexpected block type %v", path, o["type"])
	}
}

func (c *checker) element(path string, e map[string]any, ids map[string]bool) {
	id := c.id(path+".action_id", e["action_id"])
	if ids[id] {
		c.addf("%s: duplicate action_id %q in its block", path, id)
	}
	ids[id] = true
	switch e["type"] {
	case "button":
		c.text(path+".text", e["text"], 75, "plain_text")
		if v, ok := e["value"].(string); ok {
			c.length(path+".value", v, 1, 2000)
		}
	case "static_select", "multi_static_select":
		c.menu(path, e, 100)
		c.confirm(path, e)
	case "checkboxes":
		c.menu(path, e, 10)
	default:
		c.addf("%s: unexpected element type %v", path, e["type"])
	}
	if e["type"] == "button" {
		c.confirm(path, e)
		if st, ok := e["style"]; ok && st != "primary" && st != "danger" {
			c.addf("%s: style %v", path, st)
		}
	}
}

// confirm checks an element's confirmation dialog, if any.
func (c *checker) confirm(path string, e map[string]any) {
	if cf, ok := e["confirm"].(map[string]any); ok {
		c.text(path+".confirm.title", cf["title"], 100, "plain_text")
		c.text(path+".confirm.text", cf["text"], 300, "")
		c.text(path+".confirm.confirm", cf["confirm"], 30, "plain_text")
		c.text(path+".confirm.deny", cf["deny"], 30, "plain_text")
	}
}

func (c *checker) menu(path string, e map[string]any, most int) {
	if e["type"] != "checkboxes" {
		c.text(path+".placeholder", e["placeholder"], 150, "plain_text")
	}
	opts, _ := e["options"].([]any)
	if len(opts) == 0 || len(opts) > most {
		c.addf("%s: %d options", path, len(opts))
	}
	values := map[string]bool{}
	for j, o := range opts {
		m, _ := o.(map[string]any)
		p := fmt.Sprintf("%s.options[%d]", path, j)
		c.text(p+".text", m["text"], 75, "plain_text")
		if d, ok := m["description"]; ok {
			c.text(p+".description", d, 75, "plain_text")
		}
		v, _ := m["value"].(string)
		c.length(p+".value", v, 1, 150)
		if values[v] {
			c.addf("%s: duplicate value %q", p, v)
		}
		values[v] = true
	}
	initial, _ := e["initial_options"].([]any)
	if io, ok := e["initial_option"]; ok {
		initial = append(initial, io)
	}
	for _, io := range initial {
		if !containsDeep(opts, io) {
			c.addf("%s: initial option %v is not among the options", path, io)
		}
	}
}

func containsDeep(list []any, v any) bool {
	for _, x := range list {
		if reflect.DeepEqual(x, v) {
			return true
		}
	}
	return false
}

func (c *checker) input(path string, e map[string]any) {
	if e["type"] == "static_select" || e["type"] == "multi_static_select" { // the Answer modal's menus
		c.id(path+".action_id", e["action_id"])
		c.menu(path, e, 100)
		return
	}
	if e["type"] == "users_select" { // the hand-off picker
		c.id(path+".action_id", e["action_id"])
		c.text(path+".placeholder", e["placeholder"], 150, "plain_text")
		return
	}
	if e["type"] != "plain_text_input" {
		c.addf("%s: type %v", path, e["type"])
		return
	}
	c.id(path+".action_id", e["action_id"])
	max, _ := e["max_length"].(float64)
	if max < 1 || max > 3000 {
		c.addf("%s: max_length %v", path, max)
	}
	if iv, ok := e["initial_value"].(string); ok {
		c.length(path+".initial_value", iv, 0, int(max))
	}
	if ph, ok := e["placeholder"]; ok {
		c.text(path+".placeholder", ph, 150, "plain_text")
	}
}

// allowedEntity matches the only <…> forms the renderer writes itself:
// mentions and dates, and links converted from Markdown links.
var allowedEntity = regexp.MustCompile(`<(@[UW][A-Z0-9]{1,31}|!subteam\^S[A-Z0-9]{1,31}|!date\^-?[0-9]+\^\{date_short_pretty\} \{time\}\|[0-9: UTC-]+|(?:https?://|mailto:)[^<>|\s]+(?:\|[^<>|]*)?)>`)

// broadcast matches @here, @channel and @everyone as typed, which some
// clients take for a mention; the renderer breaks them with a joiner.
var broadcast = regexp.MustCompile(`(?i)@(here|channel|everyone)`)

// quoteMark matches the ">" that starts a quoted line.
var quoteMark = regexp.MustCompile(`(?m)^> `)

var ampersand = regexp.MustCompile(`&(amp|lt|gt);`)

// checkEscaped reports a '<', '>' or '&' in s that is not one of the
// renderer's own mentions/dates or an escape entity: caller text that
// could ping, link or command.
func checkEscaped(s string) error {
	rest := quoteMark.ReplaceAllString(s, "")
	rest = allowedEntity.ReplaceAllString(rest, "")
	rest = ampersand.ReplaceAllString(rest, "")
	if i := strings.IndexAny(rest, "<>&"); i >= 0 {
		lo := max(0, i-30)
		return fmt.Errorf("unescaped %q near %q", rest[i], rest[lo:min(len(rest), i+30)])
	}
	if m := broadcast.FindString(s); m != "" {
		return fmt.Errorf("%q would ping in %q", m, s)
	}
	return nil
}

func toJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return b
}

func decode(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return v
}

// checkMessage runs every check on a rendered message and returns the
// problems found.
func checkMessage(t testing.TB, where string, v View, text string, bs []slack.Block) []string {
	t.Helper()
	c := &checker{where: where}
	c.length("text", text, 1, 3000)
	if err := checkEscaped(text); err != nil {
		c.addf("text: %v", err)
	}
	raw := toJSON(t, bs)
	arr, _ := decode(t, raw).([]any)
	c.blocks(arr, MaxMessageBlocks, !ended(v))
	checkIDs(c, v, arr)
	blocksSchema, _ := loadSchemas(t)
	if err := validateSchema(blocksSchema, raw); err != nil {
		c.addf("schema: %v", err)
	}
	return c.problems
}

// checkIDs checks that every block and action id of a message parses back
// to this ask and revision.
func checkIDs(c *checker, v View, arr []any) {
	for i, b := range arr {
		o, _ := b.(map[string]any)
		bid, _ := o["block_id"].(string)
		if r, err := ParseBlockID(bid); err != nil || r.AskID != v.AskID || r.Rev != v.Rev {
			c.addf("blocks[%d]: block_id %q: %+v %v", i, bid, r, err)
		}
		var els []any
		if e, ok := o["elements"].([]any); ok && o["type"] == "actions" {
			els = e
		}
		if acc, ok := o["accessory"]; ok {
			els = append(els, acc)
		}
		for _, e := range els {
			aid, _ := e.(map[string]any)["action_id"].(string)
			if r, err := ParseActionID(aid); err != nil || r.AskID != v.AskID || r.Rev != v.Rev {
				c.addf("blocks[%d]: action_id %q: %+v %v", i, aid, r, err)
			}
		}
	}
}

// checkModal runs every check on a modal and returns the problems found.
func checkModal(t testing.TB, where string, m slack.ModalViewRequest) []string {
	t.Helper()
	c := &checker{where: where}
	raw := toJSON(t, m)
	if len(raw) > 250_000 {
		c.addf("view is %d bytes", len(raw))
	}
	view, _ := decode(t, raw).(map[string]any)
	c.text("title", view["title"], 24, "plain_text")
	c.text("close", view["close"], 24, "plain_text")
	if s, ok := view["submit"]; ok {
		c.text("submit", s, 24, "plain_text")
	}
	if pm, _ := view["private_metadata"].(string); utf8.RuneCountInString(pm) > 3000 {
		c.addf("private_metadata too long")
	}
	c.id("callback_id", view["callback_id"])
	arr, _ := view["blocks"].([]any)
	c.blocks(arr, MaxModalBlocks, true)
	hasInput := false
	for _, b := range arr {
		hasInput = hasInput || b.(map[string]any)["type"] == "input"
	}
	if hasInput && view["submit"] == nil {
		c.addf("input without submit")
	}
	blocksSchema, viewSchema := loadSchemas(t)
	if err := validateSchema(blocksSchema, toJSON(t, m.Blocks)); err != nil {
		c.addf("schema (blocks): %v", err)
	}
	if err := validateSchema(viewSchema, raw); err != nil {
		c.addf("schema (view): %v", err)
	}
	return c.problems
}

func reportProblems(t testing.TB, problems []string) {
	t.Helper()
	for i, p := range problems {
		if i == 20 {
			t.Errorf("… and %d more", len(problems)-i)
			return
		}
		t.Error(p)
	}
}
