package devui

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
)

// Block is one Block Kit block made ready for the page: every text is
// already converted to safe HTML.
type Block struct {
	Type    string // header, section, context, divider, actions, input, image; "unsupported" otherwise
	BlockID string

	Text      template.HTML   // header, section
	Fields    []template.HTML // section fields
	Accessory *Element        // section accessory
	Elements  []Element       // actions elements; context elements (kind "text" or "image")

	// Input blocks.
	Label    template.HTML
	Hint     template.HTML
	Optional bool
	Element  *Element
	Error    string // the app's response_action "errors" message for this block

	// Image blocks.
	ImageURL string
	AltText  string
	Title    template.HTML

	Unsupported string // the Block Kit type this page does not draw
}

// Element is an element of a block: a button, a menu, a text input, or a
// text or image of a context block.
type Element struct {
	// Kind is what the page draws: "button", "select", "multiselect", "checkboxes",
	// "input", "text" (context text), "image", or "unsupported".
	Kind     string
	Type     string // the Block Kit type
	BlockID  string
	ActionID string

	Text        template.HTML // button label or context text
	Style       string        // "primary", "danger" or ""
	URL         string        // link of a button (http, https, mailto only)
	Value       string        // button value; text input value
	Placeholder string
	Options     []Option
	Selected    []Option // current choice of a menu, in option order
	MaxSelected int
	Confirm     *Confirm
	Multiline   bool
	MaxLength   int
	MinLength   int
	ImageURL    string
	AltText     string
}

// Option is an option of a menu.
type Option struct {
	Value       string
	Text        template.HTML
	Description template.HTML
	Selected    bool
}

// Confirm is the dialog a button or menu shows before it acts.
type Confirm struct {
	Title   template.HTML
	Text    template.HTML
	Confirm template.HTML
	Deny    template.HTML
	Danger  bool
}

// ElementState is the state Slack keeps for an interactive element, as in
// a payload's state.values[block_id][action_id].
type ElementState struct {
	Type            string       `json:"type"`
	SelectedOption  *optionWire  `json:"selected_option"`
	SelectedOptions []optionWire `json:"selected_options"`
	Value           *string      `json:"value"`
	SelectedUser    *string      `json:"selected_user"`
}

// State is the state of every element of a message or view, by block_id
// then action_id. A nil State means the initial values of the blocks.
type State map[string]map[string]ElementState

// ParseState reads {"values":{…}} (a payload's state) or the bare values
// object.
func ParseState(raw json.RawMessage) (State, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var wrapped struct {
		Values State `json:"values"`
	}
	if err := json.Unmarshal(raw, &wrapped); err != nil {
		return nil, fmt.Errorf("devui: state: %w", err)
	}
	if wrapped.Values != nil {
		return wrapped.Values, nil
	}
	var bare State
	if err := json.Unmarshal(raw, &bare); err != nil {
		return nil, fmt.Errorf("devui: state: %w", err)
	}
	return bare, nil
}

func (st State) get(blockID, actionID string) (ElementState, bool) {
	v, ok := st[blockID][actionID]
	return v, ok
}

// Wire forms of Block Kit, as much as the page needs.
type textWire struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji *bool  `json:"emoji"`
}

type optionWire struct {
	Text        *textWire `json:"text"`
	Value       string    `json:"value"`
	Description *textWire `json:"description"`
}

type confirmWire struct {
	Title   *textWire `json:"title"`
	Text    *textWire `json:"text"`
	Confirm *textWire `json:"confirm"`
	Deny    *textWire `json:"deny"`
	Style   string    `json:"style"`
}

type elementWire struct {
	Type         string          `json:"type"`
	ActionID     string          `json:"action_id"`
	Text         json.RawMessage `json:"text"` // a text object (button) or a string (context mrkdwn/plain_text)
	Emoji        *bool           `json:"emoji"`
	Style        string          `json:"style"`
	URL          string          `json:"url"`
	Value        string          `json:"value"`
	Placeholder  *textWire       `json:"placeholder"`
	Options      []optionWire    `json:"options"`
	OptionGroups []struct {
		Options []optionWire `json:"options"`
	} `json:"option_groups"`
	InitialOption    *optionWire  `json:"initial_option"`
	InitialOptions   []optionWire `json:"initial_options"`
	InitialValue     string       `json:"initial_value"`
	MaxSelectedItems int          `json:"max_selected_items"`
	Confirm          *confirmWire `json:"confirm"`
	Multiline        bool         `json:"multiline"`
	MaxLength        int          `json:"max_length"`
	MinLength        int          `json:"min_length"`
	ImageURL         string       `json:"image_url"`
	AltText          string       `json:"alt_text"`
}

type blockWire struct {
	Type      string          `json:"type"`
	BlockID   string          `json:"block_id"`
	Text      *textWire       `json:"text"`
	Fields    []textWire      `json:"fields"`
	Accessory *elementWire    `json:"accessory"`
	Elements  json.RawMessage `json:"elements"`
	Label     *textWire       `json:"label"`
	Hint      *textWire       `json:"hint"`
	Optional  bool            `json:"optional"`
	Element   *elementWire    `json:"element"`
	ImageURL  string          `json:"image_url"`
	AltText   string          `json:"alt_text"`
	Title     *textWire       `json:"title"`
}

// text converts a text object: mrkdwn through Mrkdwn, plain_text escaped.
func (n Names) text(t *textWire) template.HTML {
	if t == nil {
		return ""
	}
	if t.Type == "mrkdwn" {
		return n.Mrkdwn(t.Text)
	}
	return Plain(t.Text, t.Emoji == nil || *t.Emoji)
}

// Blocks turns the blocks of a message or view (a JSON array) into what the
// page draws, with the menus and inputs showing st (nil: their initial
// values) and input blocks carrying errs (block_id → message).
func (n Names) Blocks(raw json.RawMessage, st State, errs map[string]string) ([]Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var wire []json.RawMessage
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("devui: blocks: %w", err)
	}
	out := make([]Block, 0, len(wire))
	for _, one := range wire {
		var bw blockWire
		if err := json.Unmarshal(one, &bw); err != nil {
			out = append(out, Block{Type: "unsupported", Unsupported: "malformed block"})
			continue
		}
		out = append(out, n.block(bw, st, errs))
	}
	return out, nil
}

func (n Names) block(bw blockWire, st State, errs map[string]string) Block {
	b := Block{Type: bw.Type, BlockID: bw.BlockID}
	switch bw.Type {
	case "header":
		b.Text = n.text(bw.Text)
	case "section":
		b.Text = n.text(bw.Text)
		for i := range bw.Fields {
			b.Fields = append(b.Fields, n.text(&bw.Fields[i]))
		}
		if bw.Accessory != nil {
			el := n.element(*bw.Accessory, bw.BlockID, st)
			b.Accessory = &el
		}
	case "context":
		var els []elementWire
		_ = json.Unmarshal(bw.Elements, &els)
		for _, ew := range els {
			b.Elements = append(b.Elements, n.contextElement(ew))
		}
	case "actions":
		var els []elementWire
		_ = json.Unmarshal(bw.Elements, &els)
		for _, ew := range els {
			b.Elements = append(b.Elements, n.element(ew, bw.BlockID, st))
		}
	case "divider":
	case "input":
		b.Label = n.text(bw.Label)
		b.Hint = n.text(bw.Hint)
		b.Optional = bw.Optional
		if bw.Element != nil {
			el := n.element(*bw.Element, bw.BlockID, st)
			b.Element = &el
		}
		b.Error = errs[bw.BlockID]
	case "image":
		if u, ok := safeURL(bw.ImageURL); ok {
			b.ImageURL = u
		}
		b.AltText = bw.AltText
		b.Title = n.text(bw.Title)
	default:
		b.Type, b.Unsupported = "unsupported", bw.Type
	}
	return b
}

// contextElement converts an element of a context block: a text object
// or an image.
func (n Names) contextElement(ew elementWire) Element {
	switch ew.Type {
	case "mrkdwn", "plain_text":
		var s string
		_ = json.Unmarshal(ew.Text, &s)
		return Element{Kind: "text", Type: ew.Type, Text: n.text(&textWire{Type: ew.Type, Text: s, Emoji: ew.Emoji})}
	case "image":
		el := Element{Kind: "image", Type: ew.Type, AltText: ew.AltText}
		if u, ok := safeURL(ew.ImageURL); ok {
			el.ImageURL = u
		}
		return el
	}
	return Element{Kind: "unsupported", Type: ew.Type}
}

// element converts an interactive element, taking its current value from st.
func (n Names) element(ew elementWire, blockID string, st State) Element {
	el := Element{Type: ew.Type, BlockID: blockID, ActionID: ew.ActionID}
	if ew.Placeholder != nil {
		el.Placeholder = ew.Placeholder.Text
	}
	if ew.Confirm != nil {
		el.Confirm = &Confirm{
			Title: n.text(ew.Confirm.Title), Text: n.text(ew.Confirm.Text),
			Confirm: n.text(ew.Confirm.Confirm), Deny: n.text(ew.Confirm.Deny),
			Danger: ew.Confirm.Style == "danger",
		}
		if el.Confirm.Confirm == "" {
			el.Confirm.Confirm = "Confirm"
		}
		if el.Confirm.Deny == "" {
			el.Confirm.Deny = "Cancel"
		}
	}
	state, hasState := st.get(blockID, ew.ActionID)
	switch ew.Type {
	case "button":
		el.Kind = "button"
		var t textWire
		_ = json.Unmarshal(ew.Text, &t)
		el.Text = n.text(&t)
		if ew.Style == "primary" || ew.Style == "danger" {
			el.Style = ew.Style
		}
		if u, ok := safeURL(ew.URL); ok {
			el.URL = u
		}
		el.Value = ew.Value
	case "static_select", "multi_static_select", "checkboxes":
		el.Kind = "select"
		switch ew.Type {
		case "multi_static_select":
			el.Kind = "multiselect"
		case "checkboxes":
			el.Kind = "checkboxes"
		}
		el.MaxSelected = ew.MaxSelectedItems
		opts := ew.Options
		for _, g := range ew.OptionGroups {
			opts = append(opts, g.Options...)
		}
		chosen := map[string]bool{}
		switch {
		case hasState && ew.Type == "static_select":
			if state.SelectedOption != nil {
				chosen[state.SelectedOption.Value] = true
			}
		case hasState:
			for _, o := range state.SelectedOptions {
				chosen[o.Value] = true
			}
		case ew.InitialOption != nil:
			chosen[ew.InitialOption.Value] = true
		default:
			for _, o := range ew.InitialOptions {
				chosen[o.Value] = true
			}
		}
		for _, o := range opts {
			opt := Option{Value: o.Value, Text: n.text(o.Text), Description: n.text(o.Description), Selected: chosen[o.Value]}
			el.Options = append(el.Options, opt)
			if opt.Selected {
				el.Selected = append(el.Selected, opt)
			}
		}
	case "users_select":
		// A menu of the workspace's people, as Slack's user picker.
		el.Kind = "select"
		chosen := ""
		if hasState && state.SelectedUser != nil {
			chosen = *state.SelectedUser
		}
		ids := make([]string, 0, len(n.Users))
		for id := range n.Users {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			opt := Option{Value: id, Text: template.HTML(template.HTMLEscapeString(n.Users[id])), Selected: id == chosen}
			el.Options = append(el.Options, opt)
			if opt.Selected {
				el.Selected = append(el.Selected, opt)
			}
		}
	case "plain_text_input", "email_text_input", "url_text_input", "number_input":
		el.Kind = "input"
		el.Multiline, el.MaxLength, el.MinLength = ew.Multiline, ew.MaxLength, ew.MinLength
		el.Value = ew.InitialValue
		if hasState {
			el.Value = ""
			if state.Value != nil {
				el.Value = *state.Value
			}
		}
	default:
		el.Kind = "unsupported"
	}
	return el
}

// HasActions reports whether blocks hold anything a person can act on.
func HasActions(blocks []Block) bool {
	for _, b := range blocks {
		if b.Type == "actions" || b.Type == "input" || (b.Accessory != nil && b.Accessory.Kind != "unsupported") {
			return true
		}
	}
	return false
}

// PlainOf returns the text of converted HTML without markup (line breaks
// as spaces), for titles and tests.
func PlainOf(h template.HTML) string {
	s := strings.ReplaceAll(string(h), "<br>", " ")
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return html.UnescapeString(b.String())
}
