package main

import (
	"bytes"
	"net/http"
	"os"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
)

// keysCmd runs `slackask keys args…` on the harness's database and returns
// its stdout.
func keysCmd(t *testing.T, h *harness, args ...string) string {
	t.Helper()
	t.Setenv("SLACKASK_DATABASE", h.cfg.Database)
	var out, errb bytes.Buffer
	if code := run(t.Context(), append([]string{"keys"}, args...), nil, &out, &errb); code != 0 {
		t.Fatalf("slackask keys %v: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// TestKeysEndToEnd: keys made with `slackask keys create` beside a running
// serve (its SQLite file locked) work at once: a scoped key asks inside its
// scope (answered in the fake), is 403 FORBIDDEN outside it, over HTTP and
// MCP alike; another key's ask is 404 and absent from its list; a revoked
// key is 401; /metrics is the server token's only; neither the log nor the
// database file holds a key.
func TestKeysEndToEnd(t *testing.T) {
	const server = "server-token-e2e"
	h := start(t, withConfig(func(c *config.Config) { c.APIToken = server }))
	keyA := strings.TrimSpace(keysCmd(t, h, "create", "--name", "deploy-bot", "--channels", channel+","+alice, "--responders", alice))
	keyB := strings.TrimSpace(keysCmd(t, h, "create", "--name", "triage"))
	if !strings.HasPrefix(keyA, "sak_") || !strings.HasPrefix(keyB, "sak_") || keyA == keyB {
		t.Fatalf("keys %q %q", keyA, keyB)
	}

	in := ask1(question("deploy", "Deploy?", "Yes", "No"))
	var a interaction.Ask
	if code := h.doAs(keyA, "POST", "/v1/asks", in, &a); code != 201 {
		t.Fatalf("key A create: %d", code)
	}
	out := in
	out.Channel = "C0ELSE"
	var e struct{ Error *interaction.Error }
	if code := h.doAs(keyA, "POST", "/v1/asks", out, &e); code != 403 || e.Error.Code != interaction.Forbidden {
		t.Fatalf("key A outside its channels: %d %+v", code, e.Error)
	}
	out = in
	out.Responders = []string{bob}
	if code := h.doAs(keyA, "POST", "/v1/asks", out, &e); code != 403 || e.Error.Code != interaction.Forbidden {
		t.Fatalf("key A asking bob: %d %+v", code, e.Error)
	}
	if n := len(h.fake.Messages(channel)); n != 1 {
		t.Fatalf("%d messages, want only the one allowed ask's", n)
	}
	// The ask took the key's responders: alice answers.
	p := h.fake.Person(alice)
	ctx := ctxT(t)
	// A one-question single-select ask is answered by its pick.
	if _, err := p.Select(ctx, channel, a.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	var got interaction.Ask
	if code := h.doAs(keyA, "GET", "/v1/asks/"+a.ID+"?wait=15s", nil, &got); code != 200 || got.Status != interaction.StatusAnswered || got.AnsweredBy.ID != alice {
		t.Fatalf("key A wait: %d %s %+v", code, got.Status, got.AnsweredBy)
	}

	for _, m := range []string{"GET", "DELETE"} {
		if code := h.doAs(keyB, m, "/v1/asks/"+a.ID, nil, nil); code != 404 {
			t.Errorf("key B %s key A's ask: %d, want 404", m, code)
		}
	}
	if code := h.doAs(keyB, "GET", "/v1/asks/"+a.ID+"/events", nil, nil); code != 404 {
		t.Errorf("key B reads key A's ask's events: %d, want 404", code)
	}
	if code := h.doAs(keyA, "GET", "/v1/asks/"+a.ID+"/events", nil, nil); code != 200 {
		t.Errorf("key A reads its ask's events: %d", code)
	}
	if code := h.doAs(keyA, "GET", "/v1/events", nil, &e); code != 403 || e.Error.Code != interaction.Forbidden {
		t.Errorf("key A reads the feed of every ask's events: %d, want 403", code)
	}
	var list struct{ Asks []interaction.Ask }
	if code := h.doAs(keyB, "GET", "/v1/asks", nil, &list); code != 200 || len(list.Asks) != 0 {
		t.Errorf("key B lists %d asks (%d), want none", len(list.Asks), code)
	}
	if code := h.doAs(server, "GET", "/v1/asks/"+a.ID, nil, nil); code != 200 {
		t.Errorf("the server token reads key A's ask: %d", code)
	}

	// MCP over HTTP: the key is the bearer token there too.
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := cl.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{keyA, h.http.Transport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
		"channel": "C0ELSE", "questions": mcpArgs["questions"]}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcpsdk.TextContent).Text, "FORBIDDEN") {
		t.Fatalf("MCP outside the key's channels: %+v %v", res, err)
	}
	res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "get_answer", Arguments: map[string]any{"id": a.ID, "waitSeconds": 0}})
	if err != nil || res.IsError {
		t.Fatalf("MCP get_answer of its own ask: %s %v", res.Content[0].(*mcpsdk.TextContent).Text, err)
	}
	csB, err := cl.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{keyB, h.http.Transport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer csB.Close()
	res, err = csB.CallTool(ctx, &mcpsdk.CallToolParams{Name: "get_answer", Arguments: map[string]any{"id": a.ID, "waitSeconds": 0}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcpsdk.TextContent).Text, "NOT_FOUND") {
		t.Fatalf("MCP get_answer of another key's ask: %+v %v", res, err)
	}
	// Closed while their keys work: a session's DELETE needs its key.
	_ = csB.Close()
	_ = cs.Close()

	// /metrics counts every key's asks: the server token's only.
	req, _ := http.NewRequest("GET", h.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+keyA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("/metrics with a key: %d, want 403", resp.StatusCode)
	}

	listed := keysCmd(t, h, "list")
	if !strings.Contains(listed, "deploy-bot") || !strings.Contains(listed, "triage") {
		t.Errorf("keys list:\n%s", listed)
	}
	keysCmd(t, h, "revoke", "deploy-bot")
	if code := h.doAs(keyA, "GET", "/v1/asks", nil, nil); code != 401 {
		t.Errorf("a revoked key: %d, want 401", code)
	}
	if code := h.doAs(keyB, "GET", "/v1/asks", nil, nil); code != 200 {
		t.Errorf("revoking deploy-bot stopped triage: %d", code)
	}

	raw, err := os.ReadFile(h.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(h.cfg.Database + "-wal")
	for _, k := range []string{keyA, keyB} {
		secret := k[strings.LastIndex(k, "_")+1:]
		if bytes.Contains(raw, []byte(secret)) || bytes.Contains(wal, []byte(secret)) || strings.Contains(h.logs.String(), secret) || strings.Contains(listed, secret) {
			t.Errorf("a key's secret is in the database file, the log or the listing")
		}
	}
}

// `slackask ask --workspace` names the workspace of the ask.
func TestAskWorkspaceFlag(t *testing.T) {
	in, err := askInputOf(t, "--question", "Go?", "--workspace", "T0ACME")
	if err != nil || in.Workspace != "T0ACME" {
		t.Fatalf("--workspace: %q, %v", in.Workspace, err)
	}
}
