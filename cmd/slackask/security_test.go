package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// TestSecretsNeverLeak runs a full flow — asks, answers, a Slack failure,
// a rate limit, refused requests, a reconnect — with distinctive secrets
// and scans every log line and every HTTP response for them.
func TestSecretsNeverLeak(t *testing.T) {
	const (
		botToken = "xoxb-SECRETbot-1111-2222"
		appToken = "xapp-SECRETapp-3333-4444"
		apiToken = "SECRETapi-5555-6666"
	)
	h := start(t, withConfig(func(c *config.Config) {
		c.SlackBotToken, c.SlackAppToken, c.APIToken = botToken, appToken, apiToken
	}))
	var bodies bytes.Buffer
	raw := func(method, path, auth, body string) int {
		req, _ := http.NewRequest(method, h.base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := h.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		bodies.Write(b)
		for k, v := range resp.Header {
			bodies.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
		return resp.StatusCode
	}
	bearer := "Bearer " + apiToken
	if code := raw("GET", "/v1/asks", "", ""); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code := raw("GET", "/v1/asks", "Bearer "+botToken, ""); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	if code := raw("POST", "/v1/asks", bearer, `{"questions":[{"id":"a"}]}`); code != 400 {
		t.Fatalf("invalid: %d", code)
	}
	h.fake.FailNext("chat.postMessage", 1, slackfake.Failure{Error: "invalid_auth"})
	if code := raw("POST", "/v1/asks", bearer, `{"questions":[{"id":"a","question":"x"}]}`); code != 502 {
		t.Fatalf("slack failure: %d", code)
	}
	h.fake.FailNext("chat.postMessage", 1, slackfake.Failure{Status: 429, RetryAfter: time.Second})
	ask := h.createQueued(ask1(question("a", "Go?", "yes", "no"), question("b", "Why?")))
	h.fake.Disconnect("refresh_requested")
	if err := h.fake.WaitConnected(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	p := h.fake.Person(alice)
	if _, err := p.Select(ctxT(t), channel, ask.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctxT(t), channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	raw("GET", "/v1/asks/"+ask.ID, bearer, "")
	raw("GET", "/readyz", "", "")
	raw("GET", "/healthz", "", "")
	if got.Status != interaction.StatusAnswered {
		t.Fatalf("%+v", got)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "redacted") {
		t.Fatal("the configuration was not logged (redacted) at start")
	}
	for _, secret := range []string{botToken, appToken, apiToken, "SECRETbot", "SECRETapp", "SECRETapi"} {
		if strings.Contains(logs, secret) {
			t.Errorf("log contains %q", secret)
		}
		if strings.Contains(bodies.String(), secret) {
			t.Errorf("an HTTP response contains %q", secret)
		}
	}
}

// TestRefusesOpenAddressWithoutToken: off loopback, serve will not start
// without SLACKASK_API_TOKEN.
func TestRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-x")
	t.Setenv("SLACK_APP_TOKEN", "xapp-x")
	t.Setenv("SLACKASK_HTTP_ADDR", "0.0.0.0:0")
	t.Setenv("SLACKASK_API_TOKEN", "")
	var stderr bytes.Buffer
	if code := run(t.Context(), []string{"serve"}, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "SLACKASK_API_TOKEN") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestMentionsOnlyThroughTheMentionField: text from the caller never
// pings; the mention field pings only Slack ids.
func TestMentionsOnlyThroughTheMentionField(t *testing.T) {
	h := start(t)
	in := ask1(interaction.Question{ID: "a", Question: "<!channel> <!here> <@U0BOB> <#C0ASKS> <https://evil.example|click me> &",
		Header: "<!everyone>", Detail: "<@U0ALICE>", Options: []interaction.Option{{Label: "<!channel>", Description: "<https://x|y>"}, {Label: "ok"}}})
	in.Agent.Name = "<!here> agent"
	in.Mention = []string{"U0ALICE", "S0OPS"}
	ask := h.create(in)
	msg, _ := h.fake.Message(channel, ask.TS)
	text := mrkdwnTexts(t, msg) + msg.Text
	for _, bad := range []string{"<!channel>", "<!here>", "<!everyone>", "<@U0BOB>", "<#C0ASKS>", "<https://evil.example", "<@U0ALICE>"} {
		if bad == "<@U0ALICE>" {
			continue // mentioned on purpose below
		}
		if strings.Contains(text, bad) {
			t.Errorf("message contains the live token %q", bad)
		}
	}
	if !strings.Contains(text, "<@U0ALICE>") || !strings.Contains(text, "<!subteam^S0OPS>") {
		t.Errorf("explicit mentions missing: %s", text)
	}
	var body map[string]map[string]string
	bad := ask1(question("a", "x"))
	bad.Mention = []string{"<!channel>"}
	if code := h.do("POST", "/v1/asks", bad, &body); code != 400 || body["error"]["code"] != "INVALID_QUESTION" {
		t.Fatalf("mention of a non-id: %d %v", code, body)
	}
}

// mrkdwnTexts returns the text of every mrkdwn object of the message: the
// only places (with the fallback text) where Slack turns <…> into pings
// and links. plain_text shows "<!channel>" literally.
func mrkdwnTexts(t *testing.T, m slackfake.Message) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(m.Blocks, &v); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if x["type"] == "mrkdwn" {
				s, _ := x["text"].(string)
				out.WriteString(s + "\n")
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(v)
	return out.String()
}
