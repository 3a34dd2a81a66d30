package slackfake

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

type obj = map[string]any

func pt(s string) obj  { return obj{"type": "plain_text", "text": s} }
func mdt(s string) obj { return obj{"type": "mrkdwn", "text": s} }
func section(s string) obj {
	return obj{"type": "section", "text": mdt(s)}
}
func option(v, text string) obj { return obj{"value": v, "text": pt(text)} }
func button(id, text string) obj {
	return obj{"type": "button", "action_id": id, "text": pt(text)}
}
func actions(els ...any) obj { return obj{"type": "actions", "elements": els} }
func staticSelect(id string, opts ...any) obj {
	return obj{"type": "static_select", "action_id": id, "placeholder": pt("Pick"), "options": opts}
}
func confirmDialog() obj {
	return obj{"title": pt("Sure?"), "text": pt("Really cancel?"), "confirm": pt("Yes"), "deny": pt("No")}
}
func many(n int, f func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}
func with(m obj, kv ...any) obj {
	c := cloneJSON(m).(map[string]any)
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i].(string)] = kv[i+1]
	}
	return c
}

func TestInvalidBlocks(t *testing.T) {
	srv := newServer(t, Config{})
	x := strings.Repeat
	cases := []struct {
		name   string
		blocks []any
		want   string // substring of one error, with its pointer
	}{
		{"51 blocks", many(51, func(int) any { return section("s") }), "no more than 50 items allowed (got 51) [json-pointer:/blocks]"},
		{"long option text", []any{actions(staticSelect("a", option("v", x("o", 76))))}, "must be less than 76 characters (got 76) [json-pointer:/blocks/0/elements/0/options/0/text/text]"},
		{"long option value", []any{actions(staticSelect("a", option(x("v", 151), "o")))}, "[json-pointer:/blocks/0/elements/0/options/0/value]"},
		{"long option description", []any{actions(staticSelect("a", with(option("v", "o"), "description", pt(x("d", 76)))))}, "[json-pointer:/blocks/0/elements/0/options/0/description/text]"},
		{"101 options", []any{actions(staticSelect("a", many(101, func(i int) any { return option(fmt.Sprint(i), "o") })...))}, "no more than 100 items allowed (got 101) [json-pointer:/blocks/0/elements/0/options]"},
		{"duplicate block_id", []any{with(section("a"), "block_id", "b"), with(section("b"), "block_id", "b")}, `duplicate block_id "b", already used at /blocks/0 [json-pointer:/blocks/1/block_id]`},
		{"block_id 256", []any{with(section("a"), "block_id", x("b", 256))}, "must be less than 256 characters [json-pointer:/blocks/0/block_id]"},
		{"action_id 256", []any{actions(button(x("a", 256), "ok"))}, "[json-pointer:/blocks/0/elements/0/action_id]"},
		{"duplicate action_id", []any{actions(button("a", "x"), button("a", "y"))}, `duplicate action_id "a" in this block`},
		{"bad initial option", []any{actions(with(staticSelect("a", option("v1", "One")), "initial_option", option("v2", "Two")))}, `must exactly match one of the options: no option has value "v2" (text "Two") [json-pointer:/blocks/0/elements/0/initial_option]`},
		{"initial option text differs", []any{actions(with(staticSelect("a", option("v1", "One")), "initial_option", option("v1", "Uno")))}, `value "v1" is there but with text "One", not "Uno"`},
		{"multi initial_options", []any{actions(with(staticSelect("a", option("v1", "One")), "type", "multi_static_select", "initial_options", []any{option("zz", "Z")}))}, "[json-pointer:/blocks/0/elements/0/initial_options/0]"},
		{"section text 3001", []any{section(x("s", 3001))}, "must be less than 3001 characters (got 3001) [json-pointer:/blocks/0/text/text]"},
		{"empty section text", []any{section("")}, "must be at least 1 character [json-pointer:/blocks/0/text/text]"},
		{"section without text", []any{obj{"type": "section"}}, "missing required field: text"},
		{"11 fields", []any{obj{"type": "section", "fields": many(11, func(int) any { return mdt("f") })}}, "no more than 10 items allowed (got 11) [json-pointer:/blocks/0/fields]"},
		{"field 2001", []any{obj{"type": "section", "fields": []any{mdt(x("f", 2001))}}}, "[json-pointer:/blocks/0/fields/0/text]"},
		{"bare string text", []any{obj{"type": "section", "text": "hello"}}, "must provide an object (a text object, not a bare string) [json-pointer:/blocks/0/text]"},
		{"header mrkdwn", []any{obj{"type": "header", "text": mdt("h")}}, `must be "plain_text" (got "mrkdwn") [json-pointer:/blocks/0/text/type]`},
		{"header 151", []any{obj{"type": "header", "text": pt(x("h", 151))}}, "must be less than 151 characters"},
		{"context 11", []any{obj{"type": "context", "elements": many(11, func(int) any { return mdt("c") })}}, "no more than 10 items allowed (got 11) [json-pointer:/blocks/0/elements]"},
		{"actions 26", []any{actions(many(26, func(i int) any { return button(fmt.Sprint(i), "b") })...)}, "no more than 25 items allowed (got 26) [json-pointer:/blocks/0/elements]"},
		{"button text 76", []any{actions(button("a", x("b", 76)))}, "[json-pointer:/blocks/0/elements/0/text/text]"},
		{"button value 2001", []any{actions(with(button("a", "b"), "value", x("v", 2001)))}, "must be less than 2001 characters (got 2001) [json-pointer:/blocks/0/elements/0/value]"},
		{"button style", []any{actions(with(button("a", "b"), "style", "secondary"))}, `must be "primary" or "danger" (got "secondary")`},
		{"confirm title 101", []any{actions(with(button("a", "b"), "confirm", with(confirmDialog(), "title", pt(x("t", 101)))))}, "[json-pointer:/blocks/0/elements/0/confirm/title/text]"},
		{"confirm text 301", []any{actions(with(button("a", "b"), "confirm", with(confirmDialog(), "text", pt(x("t", 301)))))}, "[json-pointer:/blocks/0/elements/0/confirm/text/text]"},
		{"confirm label 31", []any{actions(with(button("a", "b"), "confirm", with(confirmDialog(), "deny", pt(x("t", 31)))))}, "[json-pointer:/blocks/0/elements/0/confirm/deny/text]"},
		{"confirm without deny", []any{actions(with(button("a", "b"), "confirm", obj{"title": pt("t"), "text": pt("t"), "confirm": pt("y")}))}, "missing required field: deny [json-pointer:/blocks/0/elements/0/confirm]"},
		{"unknown block type", []any{obj{"type": "carousel"}}, `unsupported block type "carousel"`},
		{"input with elements", []any{obj{"type": "input", "label": pt("l"), "elements": []any{}}}, `an input block takes exactly one element`},
		{"button in input", []any{obj{"type": "input", "label": pt("l"), "element": button("a", "b")}}, `element type "button" is not allowed in an input block`},
		{"max_length 0", []any{obj{"type": "input", "label": pt("l"), "element": obj{"type": "plain_text_input", "max_length": 0}}}, "must be an integer between 1 and 3000 [json-pointer:/blocks/0/element/max_length]"},
		{"placeholder 151", []any{obj{"type": "input", "label": pt("l"), "element": obj{"type": "plain_text_input", "placeholder": pt(x("p", 151))}}}, "[json-pointer:/blocks/0/element/placeholder/text]"},
		{"label 2001", []any{obj{"type": "input", "label": pt(x("l", 2001)), "element": obj{"type": "plain_text_input"}}}, "[json-pointer:/blocks/0/label/text]"},
		{"block not an object", []any{"section"}, "must provide an object [json-pointer:/blocks/0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, body := rawCall(t, srv, "chat.postMessage", url.Values{"channel": {"C1"}, "text": {"t"}, "blocks": {mustMarshal(t, c.blocks)}})
			if body["error"] != "invalid_blocks" {
				t.Fatalf("answer %v, want invalid_blocks", body)
			}
			errs := fmt.Sprint(body["errors"])
			if !strings.Contains(errs, c.want) {
				t.Fatalf("errors %s\nwant one containing %q", errs, c.want)
			}
			msgs := fmt.Sprint(body["response_metadata"].(map[string]any)["messages"])
			if !strings.Contains(msgs, "[ERROR] ") {
				t.Fatalf("response_metadata.messages %s", msgs)
			}
		})
	}
	if n := len(srv.Messages("C1")); n != 0 {
		t.Fatalf("%d invalid messages were stored", n)
	}
}

func TestValidBlocksPass(t *testing.T) {
	srv := newServer(t, Config{})
	x := strings.Repeat
	blocks := []any{
		obj{"type": "header", "text": pt(x("h", 150))},
		with(section(x("s", 3000)), "accessory", with(staticSelect("pick", many(100, func(i int) any { return option(fmt.Sprint(i), x("o", 75)) })...), "initial_option", option("3", x("o", 75)))),
		obj{"type": "section", "fields": many(10, func(int) any { return mdt(x("f", 2000)) })},
		obj{"type": "divider"},
		obj{"type": "context", "elements": append(many(9, func(int) any { return mdt("c") }), obj{"type": "image", "image_url": "https://x/y.png", "alt_text": "a"})},
		actions(append(many(24, func(i int) any { return button(fmt.Sprint("b", i), x("b", 75)) }),
			with(button("cancel", "Cancel"), "style", "danger", "value", x("v", 2000), "confirm", confirmDialog()))...),
		actions(obj{"type": "multi_static_select", "action_id": "m", "placeholder": pt("p"), "options": []any{option("a", "A"), option("b", "B")}, "initial_options": []any{option("b", "B")}}),
		obj{"type": "input", "label": pt("l"), "element": obj{"type": "plain_text_input", "max_length": 3000, "min_length": 0, "placeholder": pt(x("p", 150))}},
		obj{"type": "image", "image_url": "https://x/y.png", "alt_text": "a"},
		obj{"type": "rich_text", "elements": []any{}},
	}
	blocks = append(blocks, many(maxMessageBlocks-len(blocks), func(int) any { return obj{"type": "divider"} })...)
	_, body := rawCall(t, srv, "chat.postMessage", url.Values{"channel": {"C1"}, "text": {"t"}, "blocks": {mustMarshal(t, blocks)}})
	if body["ok"] != true {
		t.Fatalf("valid message refused: %v", body)
	}
}

func TestInvalidBlocksThroughSlackGo(t *testing.T) {
	srv := newServer(t, Config{})
	api := newAPI(t, srv)
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("Pick"), "pick", opt("a", strings.Repeat("x", 76)))
	_, _, err := api.PostMessage("C1", slack.MsgOptionText("q", false),
		slack.MsgOptionBlocks(slack.NewActionBlock("b1", sel)))
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_blocks" || len(se.Errors) != 1 || se.Errors[0].Message == nil {
		t.Fatalf("slack-go error: %#v", err)
	}
	if want := "[json-pointer:/blocks/0/elements/0/options/0/text/text]"; !strings.Contains(*se.Errors[0].Message, want) ||
		!strings.HasPrefix(se.ResponseMetadata.Messages[0], "[ERROR] must be less than 76 characters") {
		t.Fatalf("errors %q / %q", *se.Errors[0].Message, se.ResponseMetadata.Messages)
	}
}

func modal(blocks ...any) obj {
	return obj{"type": "modal", "title": pt("Title"), "submit": pt("Send"), "close": pt("Cancel"), "blocks": blocks}
}

func textInput(blockID, actionID string) obj {
	return obj{"type": "input", "block_id": blockID, "label": pt("Answer"), "element": obj{"type": "plain_text_input", "action_id": actionID}}
}

func TestInvalidViews(t *testing.T) {
	x := strings.Repeat
	cases := []struct {
		name string
		view obj
		want string
	}{
		{"title 25", with(modal(), "title", pt(x("t", 25))), "[ERROR] must be less than 25 characters (got 25) [json-pointer:/view/title/text]"},
		{"submit 25", with(modal(), "submit", pt(x("t", 25))), "[json-pointer:/view/submit/text]"},
		{"close 25", with(modal(), "close", pt(x("t", 25))), "[json-pointer:/view/close/text]"},
		{"input without submit", obj{"type": "modal", "title": pt("t"), "blocks": []any{textInput("b", "a")}}, "missing required field: submit"},
		{"101 blocks", modal(many(101, func(int) any { return obj{"type": "divider"} })...), "no more than 100 items allowed (got 101) [json-pointer:/view/blocks]"},
		{"private_metadata 3001", with(modal(), "private_metadata", x("p", 3001)), "[json-pointer:/view/private_metadata]"},
		{"callback_id 256", with(modal(), "callback_id", x("c", 256)), "[json-pointer:/view/callback_id]"},
		{"not a modal", with(modal(), "type", "home"), `must be "modal" (got "home")`},
		{"no title", obj{"type": "modal", "blocks": []any{}}, "missing required field: title [json-pointer:/view]"},
		{"bad block", modal(obj{"type": "header", "text": pt(x("h", 151))}), "[json-pointer:/view/blocks/0/text/text]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs, _ := validateModal(c.view)
			got := strings.Join(prefixed(errs), "\n")
			if !strings.Contains(got, c.want) {
				t.Fatalf("messages:\n%s\nwant one containing %q", got, c.want)
			}
		})
	}
	if errs, tooLarge := validateModal(modal(textInput("b", "a"))); len(errs) != 0 || tooLarge {
		t.Fatalf("valid modal refused: %v", errs)
	}
	if _, tooLarge := validateModal(with(modal(), "private_metadata", x("p", 300*1024))); !tooLarge {
		t.Fatal("a 300 kB view must be view_too_large")
	}
}
