package main

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/internal/slackfake"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

var mcpArgs = map[string]any{"questions": []any{
	map[string]any{"id": "env", "question": "Which environment?", "options": []any{map[string]any{"label": "staging"}, map[string]any{"label": "prod"}}},
	map[string]any{"id": "extra", "question": "Anything else?", "multi_select": false},
}}

// answerFirst answers the newest message: staging, then Submit.
func answerNewest(t *testing.T, fake *slackfake.Server) {
	t.Helper()
	ctx := ctxT(t)
	var msg slackfake.Message
	if err := fake.WaitFor(ctx, func() bool {
		ms := fake.Messages(channel)
		if len(ms) > 0 {
			msg = ms[len(ms)-1]
		}
		return len(ms) > 0
	}); err != nil {
		t.Fatal("no message")
	}
	p := fake.Person(alice)
	if _, err := p.Select(ctx, channel, msg.TS, control(0, "select"), "staging"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, msg.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
}

func checkToolResult(t *testing.T, res *mcpsdk.CallToolResult) {
	t.Helper()
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("tool result: %+v", res)
	}
	text := res.Content[0].(*mcpsdk.TextContent).Text
	if want := `{"answers":[{"id":"env","selected":["staging"]},{"id":"extra","selected":[]}]}`; text != want {
		t.Fatalf("text %s, want %s", text, want)
	}
	var structured map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &structured); err != nil || structured["answers"] == nil {
		t.Fatalf("structured content %s", b)
	}
}

// TestMCPOverHTTP: an MCP client calls ask_user_question at serve's /mcp,
// behind the API token, and gets the Slack answer.
func TestMCPOverHTTP(t *testing.T) {
	h := start(t, withConfig(func(c *config.Config) { c.APIToken = "mcp-token" }))
	hc := &http.Client{Transport: bearer{"mcp-token", h.http.Transport}}
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := cl.Connect(ctxT(t), &mcpsdk.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcpsdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctxT(t), &mcpsdk.CallToolParams{Name: "ask_user_question", Arguments: mcpArgs})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	answerNewest(t, h.fake)
	if res := <-done; res != nil {
		checkToolResult(t, res)
	}
	// Without the token, /mcp is refused like the rest of the API.
	resp, err := h.http.Post(h.base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("/mcp without a token: %d", resp.StatusCode)
	}
}

// TestMCPOverStdio runs `slackask mcp` as a process that forwards to a
// running `slackask serve` process.
func TestMCPOverStdio(t *testing.T) {
	r := newProcRig(t)
	r.serve()
	cmd := exec.Command(binary(t), "mcp")
	cmd.Env = r.env()
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "e2e-stdio", Version: "v0"}, nil)
	cs, err := cl.Connect(r.ctx(), &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcpsdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(r.ctx(), &mcpsdk.CallToolParams{Name: "ask_user_question", Arguments: mcpArgs})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	answerNewest(t, r.fake)
	if res := <-done; res != nil {
		checkToolResult(t, res)
	}
}
