package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/config"
)

// slackRuleCases are asks only Slack's rules refuse (its id syntax, what
// one message draws), each with the whole message every door answers.
func slackRuleCases() []struct {
	name string
	body map[string]any
	want string
} {
	qs := func(n, opts int, display string, multi bool) []any {
		var out []any
		for i := range n {
			q := map[string]any{"id": fmt.Sprint("q", i), "question": "Pick?"}
			var os []any
			for j := range opts {
				os = append(os, map[string]any{"label": fmt.Sprint("o", j)})
			}
			if opts > 0 {
				q["options"] = os
			}
			if display != "" {
				q["display"] = display
			}
			if multi {
				q["multiSelect"] = true
			}
			out = append(out, q)
		}
		return out
	}
	one := []any{map[string]any{"id": "go", "question": "Go?"}}
	confirm := []any{map[string]any{"id": "go", "question": "Go?", "options": []any{map[string]any{"label": "Yes", "confirm": map[string]any{"title": strings.Repeat("t", 101)}}}}}
	step := func(s map[string]any) []any { s["after"] = "10m"; return []any{s} }
	return []struct {
		name string
		body map[string]any
		want string
	}{
		{"mention", map[string]any{"questions": one, "mention": []any{"U0ALICE", "here"}}, `mention[1] "here": not a Slack user (U…, W…) or user-group (S…) id`},
		{"responders", map[string]any{"questions": one, "responders": []any{"alice"}}, `responders[0] "alice": not a Slack user (U…, W…) or user-group (S…) id`},
		{"user", map[string]any{"questions": one, "user": "S0OPS"}, `user "S0OPS": not a Slack user id (U… or W…)`},
		{"channel", map[string]any{"questions": one, "channel": "#asks"}, `channel "#asks": not a Slack conversation id (C…, G…, D…)`},
		{"workspace", map[string]any{"questions": one, "workspace": "acme"}, `workspace "acme": not a Slack team (T…) or Enterprise Grid organization (E…) id`},
		{"threadTs", map[string]any{"questions": one, "threadTs": "yesterday"}, `threadTs "yesterday": not a Slack message timestamp`},
		{"escalation channel", map[string]any{"questions": one, "escalation": step(map[string]any{"responders": []any{"U0BOB"}, "channel": "#ops"})}, `escalation[0].channel "#ops": not a Slack conversation id (C…, G…, D…)`},
		{"escalation responder", map[string]any{"questions": one, "escalation": step(map[string]any{"responders": []any{"bob"}})}, `escalation[0].responders[0] "bob": not a Slack user (U…, W…) or user-group (S…) id`},
		{"questions", map[string]any{"questions": qs(11, 0, "", false)}, "11 questions: at most 10 fit in one Slack message"},
		{"options", map[string]any{"questions": qs(1, 101, "", false)}, `questions[0] ("q0"): 101 options: at most 100 fit in one menu`},
		{"buttons", map[string]any{"questions": qs(1, 26, "buttons", false)}, `questions[0] ("q0"): 26 options: at most 25 fit as buttons (use display "menu")`},
		{"checkboxes", map[string]any{"questions": qs(1, 11, "buttons", true)}, `questions[0] ("q0"): 11 options: at most 10 fit as checkboxes (use display "menu")`},
		{"confirm", map[string]any{"questions": confirm}, "questions[0].options[0].confirm.title is 101 characters: at most 100"},
		{"rows", map[string]any{"questions": qs(9, 10, "buttons", false)}, `the buttons need 9 rows beyond each question's first; one Slack message holds 8: use display "menu" on some questions`},
	}
}

// TestSlackRulesAtEveryDoor: what only Slack's rules refuse is refused
// by the HTTP API (400) and the MCP tool (for the fields it takes) alike,
// with the same code and message, and nothing is posted. The messages are
// those the doors gave when interaction itself held these rules.
func TestSlackRulesAtEveryDoor(t *testing.T) {
	h := start(t, withConfig(func(c *config.Config) { c.APIToken = "rules-token" }))
	hc := &http.Client{Transport: bearer{"rules-token", h.http.Transport}}
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := cl.Connect(ctxT(t), &mcpsdk.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, c := range slackRuleCases() {
		t.Run(c.name, func(t *testing.T) {
			var body struct {
				Error struct{ Code, Message string }
			}
			if code := h.do("POST", "/v1/asks", c.body, &body); code != 400 || body.Error.Code != "INVALID_QUESTION" || body.Error.Message != c.want {
				t.Errorf("HTTP API: %d %+v, want 400 INVALID_QUESTION %q", code, body.Error, c.want)
			}
			if _, ok := c.body["mention"]; ok || c.body["threadTs"] != nil {
				return // fields the MCP tool does not take
			}
			res, err := cs.CallTool(ctxT(t), &mcpsdk.CallToolParams{Name: "ask_user_question", Arguments: c.body})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(res.Content)
			if want := "INVALID_QUESTION: " + c.want; !res.IsError || len(res.Content) != 1 || res.Content[0].(*mcpsdk.TextContent).Text != want {
				t.Errorf("MCP tool: %s, want the error %q", b, want)
			}
		})
	}
	if n := len(h.fake.Messages(channel)); n != 0 {
		t.Fatalf("%d messages posted", n)
	}
}
