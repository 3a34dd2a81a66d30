package dshtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "frames", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func dial(t *testing.T, h *Host) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(h.URL, "http")+"/api/events.mux", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func read(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, raw, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func questions() []interaction.Question {
	return []interaction.Question{
		{ID: "color", Question: "Color?", Options: []interaction.Option{{Label: "Red"}, {Label: "Blue"}}},
		{ID: "features", Question: "Features?", MultiSelect: true, Options: []interaction.Option{{Label: "Logging"}, {Label: "Metrics"}}},
	}
}

func post(t *testing.T, h *Host, path, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(h.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m
}

func TestMuxHandshakeRules(t *testing.T) {
	h := New()
	defer h.Close()
	resp, err := http.Get(h.URL + "/api/events.mux")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("plain GET: %d, want 426", resp.StatusCode)
	}
	ws := "ws" + strings.TrimPrefix(h.URL, "http") + "/api/events.mux"
	for name, hdr := range map[string]http.Header{
		"foreign Host":   {"Host": {"evil.example"}},
		"foreign Origin": {"Origin": {"http://evil.example"}},
	} {
		c, resp, err := websocket.DefaultDialer.Dial(ws, hdr)
		if err == nil {
			c.Close()
			t.Errorf("%s: handshake succeeded", name)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %v, want 403", name, err)
		}
	}
	// The host's own origin is fine.
	c, _, err := websocket.DefaultDialer.Dial(ws, http.Header{"Origin": {h.URL}})
	if err != nil {
		t.Fatalf("own origin: %v", err)
	}
	c.Close()
}

func TestMuxIsDownlinkOnly(t *testing.T) {
	h := New()
	defer h.Close()
	c := dial(t, h)
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"client-request"}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.ClosePolicyViolation || ce.Text != "downlink only" {
		t.Errorf("after a client frame: %v, want close 1008 downlink only", err)
	}
	if h.ClientFrames() != 1 {
		t.Errorf("ClientFrames = %d", h.ClientFrames())
	}
}

func TestReplayAndBroadcast(t *testing.T) {
	h := New()
	defer h.Close()
	raw := fixture(t, "question-requested.json")
	rpc, err := h.AskFrame(raw)
	if err != nil {
		t.Fatal(err)
	}
	rpc2 := h.Ask("s2", questions())

	// Each newly connected client gets the pending questions first, in
	// order, byte for byte with their original rpcId.
	a, b := dial(t, h), dial(t, h)
	for _, c := range []*websocket.Conn{a, b} {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, got, err := c.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		_ = json.Compact(&want, raw)
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("replay\n got %s\nwant %s", got, want.Bytes())
		}
		if m := read(t, c); m["rpcId"] != rpc2 || m["method"] != "question/requested" {
			t.Errorf("second replay %v", m)
		}
	}
	// An accepted respond is broadcast as question/resolved to every client.
	code, reply := post(t, h, "/api/respond", `{"type":"client-response","rpcId":"`+rpc+`","result":{"ok":false,"error":{"code":"cancelled","message":"no","details":{}}}}`)
	if code != 200 || reply["accepted"] != true {
		t.Fatalf("respond: %d %v", code, reply)
	}
	for _, c := range []*websocket.Conn{a, b} {
		m := read(t, c)
		p, _ := m["payload"].(map[string]any)
		if m["method"] != "question/resolved" || p["questionRpcId"] != rpc || p["outcome"] != "cancelled" || m["rpcId"] == rpc {
			t.Errorf("resolved frame %v", m)
		}
	}
	// A new client gets only what is still pending.
	c := dial(t, h)
	if m := read(t, c); m["rpcId"] != rpc2 {
		t.Errorf("replay after resolve %v", m)
	}
	h.SetTitle("s2", "Title")
	if m := read(t, c); m["method"] != "session/projection" || m["payload"].(map[string]any)["value"] != "Title" {
		t.Errorf("title frame %v", m)
	}
	h.Interrupt("s2")
	if m := read(t, c); m["method"] != "question/resolved" || m["payload"].(map[string]any)["outcome"] != "cancelled" {
		t.Errorf("interrupt frame %v", m)
	}
	if m := read(t, c); m["method"] != "session/event" {
		t.Errorf("turn/end frame %v", m)
	}
	res, err := h.Wait(context.Background(), rpc2)
	if err != nil || res.Via != "interrupt" {
		t.Errorf("interrupt result %+v %v", res, err)
	}
}

func TestRespondRules(t *testing.T) {
	answer := func(items string) string {
		return `{"type":"client-response","rpcId":"RPC","result":{"ok":true,"value":{"sessionId":"s","answer":{"answers":[` + items + `]}}}}`
	}
	for _, tc := range []struct {
		name, body, reason, model string
	}{
		{"labels", answer(`{"id":"color","selected":["Blue"]},{"id":"features","selected":["Metrics","Logging"]}`), "",
			`{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":["Metrics","Logging"]}]}`},
		{"skipped", answer(`{"id":"color","selected":[]},{"id":"features","selected":[]}`), "",
			`{"answers":[{"id":"color","selected":[]},{"id":"features","selected":[]}]}`},
		{"custom", answer(`{"id":"color","selected":[],"custom":"Green"},{"id":"features","selected":[]}`), "",
			`{"answers":[{"id":"color","selected":[],"custom":"Green"},{"id":"features","selected":[]}]}`},
		{"multi-select label and custom", answer(`{"id":"color","selected":[]},{"id":"features","selected":["Logging"],"custom":"and more"}`), "",
			`{"answers":[{"id":"color","selected":[]},{"id":"features","selected":["Logging"],"custom":"and more"}]}`},
		{"cancel", `{"type":"client-response","rpcId":"RPC","result":{"ok":false,"error":{"code":"cancelled","message":"m","details":{}}}}`, "", ""},
		{"order", answer(`{"id":"features","selected":[]},{"id":"color","selected":[]}`), ReasonBadResponse, ""},
		{"wrong id", answer(`{"id":"colour","selected":[]},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"too few", answer(`{"id":"color","selected":[]}`), ReasonBadResponse, ""},
		{"unknown label", answer(`{"id":"color","selected":["Green"]},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"repeated label", answer(`{"id":"color","selected":[]},{"id":"features","selected":["Logging","Logging"]}`), ReasonBadResponse, ""},
		{"two labels single-select", answer(`{"id":"color","selected":["Red","Blue"]},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"label and custom single-select", answer(`{"id":"color","selected":["Red"],"custom":"x"},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"blank custom", answer(`{"id":"color","selected":[],"custom":"  "},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"selected missing", answer(`{"id":"color"},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"selected null", answer(`{"id":"color","selected":null},{"id":"features","selected":[]}`), ReasonBadResponse, ""},
		{"other error code", `{"type":"client-response","rpcId":"RPC","result":{"ok":false,"error":{"code":"timeout","message":"m","details":{}}}}`, ReasonBadResponse, ""},
		{"no result", `{"type":"client-response","rpcId":"RPC"}`, ReasonBadResponse, ""},
		{"not json", `nope`, ReasonBadResponse, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New()
			defer h.Close()
			rpc := h.Ask("s", questions())
			code, reply := post(t, h, "/api/respond", strings.ReplaceAll(tc.body, "RPC", rpc))
			if code != 200 {
				t.Fatalf("status %d", code)
			}
			if tc.reason == "" {
				if reply["accepted"] != true {
					t.Fatalf("reply %v, want accepted", reply)
				}
				res, err := h.Wait(context.Background(), rpc)
				if err != nil || res.ModelText != tc.model {
					t.Errorf("model text %q, want %q (%v)", res.ModelText, tc.model, err)
				}
				// Settled: a second reply is not-pending.
				_, again := post(t, h, "/api/respond", strings.ReplaceAll(tc.body, "RPC", rpc))
				if again["accepted"] != false || again["reason"] != ReasonNotPending {
					t.Errorf("second reply %v, want not-pending", again)
				}
				return
			}
			if reply["accepted"] != false || reply["reason"] != tc.reason {
				t.Errorf("reply %v, want %s", reply, tc.reason)
			}
			if p := h.Pending(); len(p) != 1 {
				t.Errorf("after %s the question must stay pending; pending %v", tc.reason, p)
			}
		})
	}
	h := New()
	defer h.Close()
	if _, reply := post(t, h, "/api/respond", strings.ReplaceAll(answer(`{"id":"color","selected":[]}`), "RPC", "unknown")); reply["reason"] != ReasonNotPending {
		t.Errorf("unknown rpcId: %v, want not-pending", reply)
	}
}

func TestSessionCalls(t *testing.T) {
	h := New()
	defer h.Close()
	_, created := post(t, h, "/api/session.create", `{"type":"client-request","rpcId":"1","method":"session.create","payload":{}}`)
	res, _ := created["result"].(map[string]any)
	val, _ := res["value"].(map[string]any)
	sid, _ := val["sessionId"].(string)
	if created["type"] != "server-response" || created["rpcId"] != "1" || !strings.HasPrefix(sid, "session-") {
		t.Fatalf("session.create %v", created)
	}
	rpc := h.Ask(sid, questions())
	post(t, h, "/api/session.cancel", `{"type":"client-request","rpcId":"2","method":"session.cancel","payload":{"sessionId":"`+sid+`"}}`)
	r, err := h.Wait(context.Background(), rpc)
	if err != nil || r.Outcome != OutcomeCancelled || r.Via != "interrupt" {
		t.Errorf("after session.cancel: %+v %v", r, err)
	}
}
