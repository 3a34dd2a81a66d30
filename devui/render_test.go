package devui

import (
	"encoding/json"
	"html/template"
	"reflect"
	"strings"
	"testing"
)

// askBlocks is a message as the bot renders a pending ask (ids shortened).
const askBlocks = `[
 {"type":"section","block_id":"head","text":{"type":"mrkdwn","text":"<@U1>\n*Deploy Bot* has 2 questions:","verbatim":true}},
 {"type":"context","block_id":"who","elements":[{"type":"mrkdwn","text":"Who may answer: <@U1>, <!subteam^S1>"},{"type":"plain_text","text":"a <b> tag","emoji":true},{"type":"image","image_url":"javascript:alert(1)","alt_text":"x"}]},
 {"type":"header","block_id":"hdr","text":{"type":"plain_text","text":"Release & <roll>"}},
 {"type":"section","block_id":"q0","text":{"type":"mrkdwn","text":"*Database*\nWhich one?"},"fields":[{"type":"mrkdwn","text":"*a*"},{"type":"plain_text","text":"*b*"}]},
 {"type":"actions","block_id":"c0","elements":[
   {"type":"static_select","action_id":"sel0","placeholder":{"type":"plain_text","text":"Choose…"},
    "initial_option":{"text":{"type":"plain_text","text":"SQLite"},"value":"1"},
    "options":[{"text":{"type":"plain_text","text":"PostgreSQL"},"value":"0","description":{"type":"plain_text","text":"what we run"}},
               {"text":{"type":"plain_text","text":"SQLite"},"value":"1","description":{"type":"plain_text","text":"one file"}}]},
   {"type":"button","action_id":"other0","text":{"type":"plain_text","text":"Other…"}},
   {"type":"button","action_id":"link","text":{"type":"plain_text","text":"Docs"},"url":"javascript:alert(1)"}]},
 {"type":"divider","block_id":"d1"},
 {"type":"actions","block_id":"c1","elements":[
   {"type":"multi_static_select","action_id":"sel1","max_selected_items":2,
    "initial_options":[{"text":{"type":"plain_text","text":"dev"},"value":"0"}],
    "option_groups":[{"label":{"type":"plain_text","text":"g"},"options":[{"text":{"type":"plain_text","text":"dev"},"value":"0"},{"text":{"type":"plain_text","text":"prod"},"value":"1"}]}]}]},
 {"type":"actions","block_id":"bar","elements":[
   {"type":"button","action_id":"submit","style":"primary","text":{"type":"plain_text","text":"Submit"}},
   {"type":"button","action_id":"cancel","style":"danger","text":{"type":"plain_text","text":"Cancel"},
    "confirm":{"title":{"type":"plain_text","text":"Cancel this question?"},"text":{"type":"plain_text","text":"The agent will be told."},
               "confirm":{"type":"plain_text","text":"Yes, cancel"},"deny":{"type":"plain_text","text":"Keep it"},"style":"danger"}},
   {"type":"datepicker","action_id":"when"}]},
 {"type":"rich_text","block_id":"rt","elements":[]}
]`

func TestBlocks(t *testing.T) {
	bs, err := testNames.Blocks(json.RawMessage(askBlocks), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, b := range bs {
		types = append(types, b.Type)
	}
	if want := []string{"section", "context", "header", "section", "actions", "divider", "actions", "actions", "unsupported"}; !reflect.DeepEqual(types, want) {
		t.Fatalf("types %v, want %v", types, want)
	}
	if got := bs[0].Text; got != `<span class="mention mention-user" title="U1">@alice</span><br><b>Deploy Bot</b> has 2 questions:` {
		t.Errorf("head: %s", got)
	}
	ctx := bs[1].Elements
	if len(ctx) != 3 || ctx[0].Kind != "text" || ctx[1].Text != "a &lt;b&gt; tag" || ctx[2].Kind != "image" || ctx[2].ImageURL != "" {
		t.Errorf("context elements: %+v", ctx)
	}
	if PlainOf(ctx[0].Text) != "Who may answer: @alice, @ops" {
		t.Errorf("context text: %q", PlainOf(ctx[0].Text))
	}
	if bs[2].Text != "Release &amp; &lt;roll&gt;" {
		t.Errorf("header: %s", bs[2].Text)
	}
	if want := []template.HTML{"<b>a</b>", "*b*"}; !reflect.DeepEqual(bs[3].Fields, want) {
		t.Errorf("fields %v", bs[3].Fields)
	}

	sel := bs[4].Elements[0]
	if sel.Kind != "select" || sel.Placeholder != "Choose…" || sel.BlockID != "c0" || sel.ActionID != "sel0" {
		t.Errorf("select: %+v", sel)
	}
	if len(sel.Options) != 2 || sel.Options[0].Description != "what we run" || sel.Options[0].Selected || !sel.Options[1].Selected {
		t.Errorf("select options: %+v", sel.Options)
	}
	if len(sel.Selected) != 1 || sel.Selected[0].Text != "SQLite" {
		t.Errorf("select initial: %+v", sel.Selected)
	}
	if other := bs[4].Elements[1]; other.Kind != "button" || other.Text != "Other…" || other.Style != "" {
		t.Errorf("button: %+v", other)
	}
	if link := bs[4].Elements[2]; link.URL != "" {
		t.Errorf("a javascript: url kept: %q", link.URL)
	}

	multi := bs[6].Elements[0]
	if multi.Kind != "multiselect" || multi.MaxSelected != 2 || len(multi.Options) != 2 || len(multi.Selected) != 1 || multi.Selected[0].Value != "0" {
		t.Errorf("multi select from option groups: %+v", multi)
	}

	bar := bs[7].Elements
	if bar[0].Style != "primary" || bar[1].Style != "danger" || bar[0].Confirm != nil {
		t.Errorf("bar: %+v", bar)
	}
	c := bar[1].Confirm
	if c == nil || c.Title != "Cancel this question?" || c.Confirm != "Yes, cancel" || c.Deny != "Keep it" || !c.Danger {
		t.Errorf("confirm: %+v", c)
	}
	if bar[2].Kind != "unsupported" {
		t.Errorf("datepicker: %+v", bar[2])
	}
	if bs[8].Unsupported != "rich_text" {
		t.Errorf("unsupported block: %+v", bs[8])
	}
	if !HasActions(bs) {
		t.Error("HasActions = false")
	}
}

// TestBlocksState: the person's state wins over the initial values,
// including a cleared select (null) and an emptied multi-select.
func TestBlocksState(t *testing.T) {
	st, err := ParseState(json.RawMessage(`{"values":{
		"c0":{"sel0":{"type":"static_select","selected_option":{"text":{"type":"plain_text","text":"PostgreSQL"},"value":"0"}}},
		"c1":{"sel1":{"type":"multi_static_select","selected_options":[{"value":"1"},{"value":"0"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	bs, err := testNames.Blocks(json.RawMessage(askBlocks), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel := bs[4].Elements[0]; len(sel.Selected) != 1 || sel.Selected[0].Value != "0" {
		t.Errorf("select: %+v", sel.Selected)
	}
	if multi := bs[6].Elements[0]; len(multi.Selected) != 2 || multi.Selected[0].Value != "0" || multi.Selected[1].Value != "1" {
		t.Errorf("multi: %+v", multi.Selected)
	}

	st, _ = ParseState(json.RawMessage(`{"values":{"c0":{"sel0":{"type":"static_select","selected_option":null}},"c1":{"sel1":{"type":"multi_static_select","selected_options":[]}}}}`))
	bs, _ = testNames.Blocks(json.RawMessage(askBlocks), st, nil)
	if sel := bs[4].Elements[0]; len(sel.Selected) != 0 {
		t.Errorf("cleared select: %+v", sel.Selected)
	}
	if multi := bs[6].Elements[0]; len(multi.Selected) != 0 {
		t.Errorf("emptied multi: %+v", multi.Selected)
	}
}

// modalBlocks is the bot's "Other" modal.
const modalBlocks = `[
 {"type":"section","block_id":"question","text":{"type":"mrkdwn","text":"*Database*\nWhich one?"}},
 {"type":"input","block_id":"custom","label":{"type":"plain_text","text":"Other answer"},"hint":{"type":"plain_text","text":"Be brief"},
  "element":{"type":"plain_text_input","action_id":"text","multiline":true,"max_length":3000,"initial_value":"draft",
             "placeholder":{"type":"plain_text","text":"Type your answer"}}},
 {"type":"input","block_id":"opt","optional":true,"label":{"type":"plain_text","text":"Note"},"element":{"type":"plain_text_input","action_id":"n"}}
]`

func TestBlocksModal(t *testing.T) {
	bs, err := testNames.Blocks(json.RawMessage(modalBlocks), nil, map[string]string{"custom": "Please type an answer <b>"})
	if err != nil {
		t.Fatal(err)
	}
	in := bs[1]
	if in.Type != "input" || in.Label != "Other answer" || in.Hint != "Be brief" || in.Optional || in.Error != "Please type an answer <b>" {
		t.Errorf("input block: %+v", in)
	}
	el := in.Element
	if el == nil || el.Kind != "input" || !el.Multiline || el.MaxLength != 3000 || el.Value != "draft" || el.Placeholder != "Type your answer" || el.BlockID != "custom" || el.ActionID != "text" {
		t.Errorf("input element: %+v", el)
	}
	if !bs[2].Optional || bs[2].Error != "" {
		t.Errorf("optional input: %+v", bs[2])
	}
	// Typed text (state) replaces the initial value; a cleared input is empty.
	st, _ := ParseState(json.RawMessage(`{"values":{"custom":{"text":{"type":"plain_text_input","value":"typed"}},"opt":{"n":{"type":"plain_text_input","value":null}}}}`))
	bs, _ = testNames.Blocks(json.RawMessage(modalBlocks), st, nil)
	if bs[1].Element.Value != "typed" || bs[2].Element.Value != "" {
		t.Errorf("state values: %q %q", bs[1].Element.Value, bs[2].Element.Value)
	}
}

func TestBlocksMalformed(t *testing.T) {
	if _, err := testNames.Blocks(json.RawMessage(`{"not":"an array"}`), nil, nil); err == nil {
		t.Error("no error for an object")
	}
	bs, err := testNames.Blocks(json.RawMessage(`[1, {"type":"divider"}]`), nil, nil)
	if err != nil || len(bs) != 2 || bs[0].Type != "unsupported" || bs[1].Type != "divider" {
		t.Errorf("got %+v, %v", bs, err)
	}
	if bs, err := testNames.Blocks(nil, nil, nil); bs != nil || err != nil {
		t.Errorf("nil blocks: %v %v", bs, err)
	}
}

// TestTemplateEscapes renders a page whose texts are hostile and checks
// that none of them reaches the HTML as markup.
func TestTemplateEscapes(t *testing.T) {
	evil := `<script>alert(1)</script>`
	blocks := `[{"type":"section","block_id":"` + `x\"><script>alert(1)</script>` + `","text":{"type":"mrkdwn","text":"&lt;img src=x onerror=alert(1)&gt; <!channel> ` + `<script>` + `"}},
	 {"type":"actions","block_id":"a","elements":[{"type":"static_select","action_id":"s\"><script>","placeholder":{"type":"plain_text","text":"` + `<script>` + `"},
	   "options":[{"text":{"type":"plain_text","text":"<img src=x onerror=alert(1)>"},"value":"v\"><script>"}]},
	   {"type":"button","action_id":"b","text":{"type":"plain_text","text":"<script>"},"url":"https://x.test/\"><script>"}]}]`
	bs, err := testNames.Blocks(json.RawMessage(blocks), nil, map[string]string{"a": evil})
	if err != nil {
		t.Fatal(err)
	}
	p := page{
		As:       person{ID: "U1", Name: evil, Initials: "<>"},
		People:   []person{{ID: `U1"><script>`, Name: evil}},
		Channel:  navItem{ID: "C1", Name: evil},
		Channels: []navItem{{ID: "C1", Name: evil, Href: "javascript:alert(1)"}},
		Messages: []message{{Key: evil, Channel: "C1", TS: "1.2", Author: evil, Blocks: bs, Fallback: testNames.Mrkdwn(evil)}},
		Modal:    &modal{ViewID: evil, Title: Plain(evil, true), Blocks: bs},
		Curl:     "curl -d '" + evil + "'",
		APIURL:   evil,
		Query:    evil,
	}
	var b strings.Builder
	if err := pageTmpl.ExecuteTemplate(&b, "page.html", p); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "<script"); n != 1 { // only the page's own script tag
		t.Errorf("%d <script tags in the page:\n%s", n, out)
	}
	for _, bad := range []string{"<img", `href="javascript:`, "\"><script"} {
		if strings.Contains(out, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.Contains(out, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("the escaped text is not shown")
	}
}
