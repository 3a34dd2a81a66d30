// Package dshtest is a stand-in of a deepseek-harness web host ("dsh web")
// for tests, faithful to the "connected client" protocol as observed
// against dsh 0.1.0-rc.8:
//
//   - GET /api/events.mux is a downlink-only websocket: a client that sends
//     a data frame is closed with 1008 "downlink only"; a plain GET answers
//     426; the Host header must be loopback and Origin absent or the host's
//     own. Every newly connected client first gets the pending questions
//     (question/requested with their original rpcId), in order.
//   - POST /api/respond takes a bare client-response and answers
//     {"accepted":true} or {"accepted":false,"reason":"not-pending"|"bad-response"}
//     by the rules of the host; an accepted reply settles the question and
//     question/resolved is sent to every client.
//   - POST /api/session.create, session.cancel and session.list take the
//     client-request envelope.
//
// The test drives the "agent" side: Ask puts a question, SetTitle sends a
// session/projection title, AnswerElsewhere, Interrupt and Forget settle a
// question without the client under test, and Wait returns what the tool
// call (and the model) got.
package dshtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/slackask/slackask/interaction"
)

// Outcomes of a settled question, as in question/resolved.
const (
	OutcomeAnswered  = "answered"
	OutcomeCancelled = "cancelled"
)

// Reasons of a refused reply.
const (
	ReasonNotPending  = "not-pending"
	ReasonBadResponse = "bad-response"
)

// Question is a question/requested the host sent.
type Question struct {
	RPCID     string
	SessionID string
	Questions []interaction.Question
	// Frame is the question/requested frame as sent (and replayed).
	Frame []byte

	done   chan struct{}
	result Result
}

// Result is how a question was settled: what the tool call returned.
type Result struct {
	Outcome string // OutcomeAnswered or OutcomeCancelled
	// Via is "respond" (a client's POST /api/respond), "elsewhere"
	// (AnswerElsewhere/CancelElsewhere), "interrupt" (Interrupt or
	// session.cancel: the tool gets ASK_ABORTED) or "forget" (Forget).
	Via string
	// Answer is the accepted answer; ModelText is what the model receives
	// for it: the compact JSON {"answers":[…]} without unused custom keys.
	Answer    *interaction.Answer
	ModelText string
	// ErrorCode and ErrorMessage are the cancel of a respond ("cancelled").
	ErrorCode, ErrorMessage string
	SessionID               string // value.sessionId of an accepted answer
}

// Respond is one POST /api/respond the host received.
type Respond struct {
	Time     time.Time
	Body     []byte
	Status   int
	Accepted bool
	Reason   string
}

// Connect is one GET /api/events.mux the host received.
type Connect struct {
	Time     time.Time
	Host     string
	Origin   string
	Upgraded bool
}

// Host is a running stand-in host. Its methods are safe for concurrent use.
type Host struct {
	// URL is the base URL, http://127.0.0.1:PORT.
	URL string

	srv *httptest.Server
	wg  sync.WaitGroup // mux handlers and writers

	mu             sync.Mutex
	closed         bool
	clients        map[*client]struct{}
	pending        []*Question
	all            map[string]*Question
	responds       []Respond
	connects       []Connect
	clientFrames   int
	rejectConnects int
	failResponds   int
	forced         []string
	sessions       []string
	seq            int
}

type client struct {
	conn *websocket.Conn
	send chan []byte
	once sync.Once
	done chan struct{}
}

// New starts a host on a loopback port.
func New() *Host {
	h := &Host{clients: map[*client]struct{}{}, all: map[string]*Question{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/events.mux", h.serveMux)
	mux.HandleFunc("POST /api/respond", h.serveRespond)
	mux.HandleFunc("POST /api/{method}", h.serveCall)
	h.srv = httptest.NewServer(mux)
	h.URL = h.srv.URL
	return h
}

// Close drops every client and stops the host.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	for c := range h.clients {
		c.kill()
	}
	h.mu.Unlock()
	h.srv.Close()
	h.wg.Wait()
}

// Ask puts questions from sessionID, as the agent's ask_user_question
// does: the question/requested frame goes to every client and is replayed
// to every client that connects while the question is pending. It returns
// the question's rpcId.
func (h *Host) Ask(sessionID string, questions []interaction.Question) string {
	items := make([]frameItem, len(questions))
	for i, q := range questions {
		items[i] = frameItem{ID: q.ID, Question: q.Question, Detail: q.Detail, Header: q.Header,
			Options: q.Options, MultiSelect: q.MultiSelect, Intent: q.Intent}
		if items[i].Options == nil {
			items[i].Options = []interaction.Option{}
		}
	}
	rpcID := newID()
	raw := frame(rpcID, "question/requested", questionPayload{Type: "question/requested", SessionID: sessionID, Questions: items})
	if _, err := h.AskFrame(raw); err != nil {
		panic(err) // built above: cannot be malformed
	}
	return rpcID
}

// AskFrame puts the question of a raw question/requested frame (e.g. a
// captured one), sent byte for byte. It returns the frame's rpcId.
func (h *Host) AskFrame(raw []byte) (string, error) {
	var f struct {
		RPCID   string `json:"rpcId"`
		Method  string `json:"method"`
		Payload struct {
			SessionID string                 `json:"sessionId"`
			Questions []interaction.Question `json:"questions"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", fmt.Errorf("dshtest: frame: %w", err)
	}
	if f.Method != "question/requested" || f.RPCID == "" {
		return "", errors.New("dshtest: not a question/requested frame")
	}
	q := &Question{RPCID: f.RPCID, SessionID: f.Payload.SessionID, Questions: f.Payload.Questions,
		Frame: compact(raw), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.all[q.RPCID]; dup {
		return "", fmt.Errorf("dshtest: rpcId %s already used", q.RPCID)
	}
	h.all[q.RPCID] = q
	h.pending = append(h.pending, q)
	h.broadcastLocked(q.Frame)
	return q.RPCID, nil
}

// SetTitle sends the session/projection frame with key "title".
func (h *Host) SetTitle(sessionID, title string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	h.broadcastLocked(frame(newID(), "session/projection", map[string]any{
		"type": "session/projection", "sessionId": sessionID, "key": "title", "value": title, "seq": h.seq,
	}))
}

// Broadcast sends a raw frame to every connected client (not replayed).
func (h *Host) Broadcast(raw []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broadcastLocked(compact(raw))
}

// AnswerElsewhere settles a pending question with an answer from another
// client (the answer is checked like a respond); every client gets
// question/resolved "answered".
func (h *Host) AnswerElsewhere(rpcID string, ans interaction.Answer) error {
	raw, err := json.Marshal(ans)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.pendingLocked(rpcID)
	if q == nil {
		return errors.New(ReasonNotPending)
	}
	parsed, text, ok := checkAnswer(q.Questions, raw)
	if !ok {
		return errors.New(ReasonBadResponse)
	}
	h.settleLocked(q, Result{Outcome: OutcomeAnswered, Via: "elsewhere", Answer: &parsed, ModelText: text}, true)
	return nil
}

// CancelElsewhere settles a pending question as cancelled by another
// client; every client gets question/resolved "cancelled".
func (h *Host) CancelElsewhere(rpcID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.pendingLocked(rpcID)
	if q == nil {
		return errors.New(ReasonNotPending)
	}
	h.settleLocked(q, Result{Outcome: OutcomeCancelled, Via: "elsewhere", ErrorCode: "cancelled"}, true)
	return nil
}

// Interrupt cancels the session's turn (session.cancel): its pending
// questions are settled (the tool gets ASK_ABORTED), every client gets
// question/resolved "cancelled" for each, then session/event turn/end
// with reason aborted.
func (h *Host) Interrupt(sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range append([]*Question(nil), h.pending...) {
		if q.SessionID == sessionID {
			h.settleLocked(q, Result{Outcome: OutcomeCancelled, Via: "interrupt"}, true)
		}
	}
	h.seq++
	h.broadcastLocked(frame(newID(), "session/event", map[string]any{
		"type": "session/event", "sessionId": sessionID,
		"event": map[string]any{"type": "turn/end", "seq": h.seq, "time": time.Now().UnixMilli(),
			"data": map[string]any{"turn": 1, "reason": map[string]any{"kind": "aborted", "reason": map[string]any{"kind": "user"}}}},
	}))
}

// Forget settles a pending question without telling any client, as when
// it was settled while no client was connected (or the host restarted): it
// is no longer replayed and a respond gets not-pending.
func (h *Host) Forget(rpcID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.pendingLocked(rpcID); q != nil {
		h.settleLocked(q, Result{Outcome: OutcomeCancelled, Via: "forget"}, false)
	}
}

// Wait returns the result of the question once it is settled.
func (h *Host) Wait(ctx context.Context, rpcID string) (Result, error) {
	h.mu.Lock()
	q := h.all[rpcID]
	h.mu.Unlock()
	if q == nil {
		return Result{}, fmt.Errorf("dshtest: no question %s", rpcID)
	}
	select {
	case <-q.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return q.result, nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Pending returns the rpcIds of the pending questions, in ask order.
func (h *Host) Pending() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, len(h.pending))
	for i, q := range h.pending {
		ids[i] = q.RPCID
	}
	return ids
}

// Responds returns every POST /api/respond so far.
func (h *Host) Responds() []Respond {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Respond(nil), h.responds...)
}

// Connects returns every GET /api/events.mux so far.
func (h *Host) Connects() []Connect {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Connect(nil), h.connects...)
}

// Clients returns the number of connected mux clients.
func (h *Host) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// ClientFrames returns how many data frames clients sent (each one got the
// client closed with 1008).
func (h *Host) ClientFrames() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clientFrames
}

// DropClients cuts every mux connection at the TCP level, without a close
// frame, as a crashed or restarted host would.
func (h *Host) DropClients() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		c.kill()
	}
}

// RejectConnects makes the next n mux handshakes fail with 503.
func (h *Host) RejectConnects(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rejectConnects = n
}

// FailResponds makes the next n POST /api/respond answer 503 without
// looking at them.
func (h *Host) FailResponds(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failResponds = n
}

// ForceReasons makes the next POST /api/respond calls answer
// {"accepted":false,"reason":r} with the given reasons in turn, without
// looking at them.
func (h *Host) ForceReasons(reasons ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.forced = append(h.forced, reasons...)
}

func (h *Host) pendingLocked(rpcID string) *Question {
	for _, q := range h.pending {
		if q.RPCID == rpcID {
			return q
		}
	}
	return nil
}

// settleLocked ends q with r and, if tell, sends question/resolved to
// every client.
func (h *Host) settleLocked(q *Question, r Result, tell bool) {
	for i, p := range h.pending {
		if p == q {
			h.pending = append(h.pending[:i:i], h.pending[i+1:]...)
			break
		}
	}
	q.result = r
	close(q.done)
	if tell {
		h.broadcastLocked(frame(newID(), "question/resolved", resolvedPayload{
			Type: "question/resolved", SessionID: q.SessionID, QuestionRPCID: q.RPCID, Outcome: r.Outcome,
		}))
	}
}

func (h *Host) broadcastLocked(raw []byte) {
	for c := range h.clients {
		c.push(raw)
	}
}

// serveMux serves GET /api/events.mux.
func (h *Host) serveMux(w http.ResponseWriter, r *http.Request) {
	con := Connect{Time: time.Now(), Host: r.Host, Origin: r.Header.Get("Origin")}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	h.wg.Add(1)
	defer h.wg.Done()
	reject := h.rejectConnects > 0
	if reject {
		h.rejectConnects--
	}
	h.mu.Unlock()

	status := 0
	switch {
	case !websocket.IsWebSocketUpgrade(r):
		status = http.StatusUpgradeRequired
	case !loopback(r.Host):
		status = http.StatusForbidden
	case con.Origin != "" && con.Origin != "http://"+r.Host:
		status = http.StatusForbidden
	case reject:
		status = http.StatusServiceUnavailable
	}
	if status != 0 {
		h.record(con)
		http.Error(w, http.StatusText(status), status)
		return
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		h.record(con)
		return
	}
	con.Upgraded = true
	c := &client{conn: conn, send: make(chan []byte, 1024), done: make(chan struct{})}
	h.mu.Lock()
	h.connects = append(h.connects, con)
	if h.closed {
		h.mu.Unlock()
		_ = conn.Close()
		return
	}
	h.clients[c] = struct{}{}
	for _, q := range h.pending { // replay, before anything else can be sent
		c.push(q.Frame)
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		c.write()
	}()

	// Downlink only: the first data frame from the client closes it.
	if _, _, err := conn.ReadMessage(); err == nil {
		h.mu.Lock()
		h.clientFrames++
		h.mu.Unlock()
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.ClosePolicyViolation, "downlink only"), time.Now().Add(time.Second))
	}
	c.kill()
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

func (h *Host) record(c Connect) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connects = append(h.connects, c)
}

func (c *client) push(raw []byte) {
	select {
	case c.send <- raw:
	default:
		c.kill() // a client that cannot keep up is dropped
	}
}

func (c *client) write() {
	for {
		select {
		case raw := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if err := c.conn.WriteMessage(websocket.TextMessage, raw); err != nil {
				c.kill()
				return
			}
		case <-c.done:
			return
		}
	}
}

func (c *client) kill() {
	c.once.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

// serveRespond serves POST /api/respond.
func (h *Host) serveRespond(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec := Respond{Time: time.Now(), Body: body, Status: http.StatusOK}
	h.mu.Lock()
	defer func() {
		h.responds = append(h.responds, rec)
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Status)
		if rec.Status == http.StatusOK {
			reply := map[string]any{"accepted": rec.Accepted}
			if !rec.Accepted {
				reply["reason"] = rec.Reason
			}
			_ = json.NewEncoder(w).Encode(reply)
		} else {
			_, _ = w.Write([]byte(`{"error":"unavailable"}`))
		}
	}()
	switch {
	case h.failResponds > 0:
		h.failResponds--
		rec.Status = http.StatusServiceUnavailable
		return
	case len(h.forced) > 0:
		rec.Reason, h.forced = h.forced[0], h.forced[1:]
		return
	}
	var msg struct {
		Type   string `json:"type"`
		RPCID  string `json:"rpcId"`
		Result *struct {
			OK    *bool `json:"ok"`
			Value *struct {
				SessionID string          `json:"sessionId"`
				Answer    json.RawMessage `json:"answer"`
			} `json:"value"`
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil || msg.Type != "client-response" || msg.RPCID == "" ||
		msg.Result == nil || msg.Result.OK == nil {
		rec.Reason = ReasonBadResponse
		return
	}
	q := h.pendingLocked(msg.RPCID)
	if q == nil {
		rec.Reason = ReasonNotPending
		return
	}
	res := msg.Result
	if *res.OK {
		if res.Value == nil {
			rec.Reason = ReasonBadResponse
			return
		}
		ans, text, ok := checkAnswer(q.Questions, res.Value.Answer)
		if !ok {
			rec.Reason = ReasonBadResponse
			return
		}
		rec.Accepted = true
		h.settleLocked(q, Result{Outcome: OutcomeAnswered, Via: "respond", Answer: &ans, ModelText: text, SessionID: res.Value.SessionID}, true)
		return
	}
	if res.Error == nil || res.Error.Code != "cancelled" {
		rec.Reason = ReasonBadResponse
		return
	}
	rec.Accepted = true
	h.settleLocked(q, Result{Outcome: OutcomeCancelled, Via: "respond", ErrorCode: res.Error.Code, ErrorMessage: res.Error.Message}, true)
}

// checkAnswer applies the host's rules to a raw {"answers":[…]}: answers in
// question order with matching ids; selected an array of labels among the
// question's options without duplicates; a single-select question takes at
// most one label and never a label together with custom; custom, when
// present, a string that is not blank. It returns the answer and the text
// the model receives.
func checkAnswer(questions []interaction.Question, raw json.RawMessage) (interaction.Answer, string, bool) {
	var a struct {
		Answers []struct {
			ID       string          `json:"id"`
			Selected json.RawMessage `json:"selected"`
			Custom   json.RawMessage `json:"custom"`
		} `json:"answers"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || len(a.Answers) != len(questions) {
		return interaction.Answer{}, "", false
	}
	type modelItem struct {
		ID       string   `json:"id"`
		Selected []string `json:"selected"`
		Custom   *string  `json:"custom,omitempty"`
	}
	model := struct {
		Answers []modelItem `json:"answers"`
	}{Answers: []modelItem{}}
	out := interaction.Answer{Answers: make([]interaction.AnswerItem, len(questions))}
	for i, q := range questions {
		it := a.Answers[i]
		if it.ID != q.ID {
			return interaction.Answer{}, "", false
		}
		var selected []string
		if t := bytes.TrimSpace(it.Selected); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &selected) != nil {
			return interaction.Answer{}, "", false
		}
		var custom *string
		if len(it.Custom) > 0 && string(bytes.TrimSpace(it.Custom)) != "null" {
			var s string
			if json.Unmarshal(it.Custom, &s) != nil || strings.TrimSpace(s) == "" {
				return interaction.Answer{}, "", false
			}
			custom = &s
		}
		seen := map[string]bool{}
		for _, l := range selected {
			if seen[l] || !hasLabel(q, l) {
				return interaction.Answer{}, "", false
			}
			seen[l] = true
		}
		if !q.MultiSelect && (len(selected) > 1 || (len(selected) > 0 && custom != nil)) {
			return interaction.Answer{}, "", false
		}
		item := interaction.AnswerItem{ID: q.ID, Selected: append([]string{}, selected...)}
		if custom != nil {
			item.Custom = *custom
		}
		out.Answers[i] = item
		model.Answers = append(model.Answers, modelItem{ID: q.ID, Selected: item.Selected, Custom: custom})
	}
	var text bytes.Buffer
	enc := json.NewEncoder(&text) // like JSON.stringify: compact, no HTML escaping
	enc.SetEscapeHTML(false)
	if err := enc.Encode(model); err != nil {
		return interaction.Answer{}, "", false
	}
	return out, strings.TrimRight(text.String(), "\n"), true
}

func hasLabel(q interaction.Question, label string) bool {
	for _, o := range q.Options {
		if o.Label == label {
			return true
		}
	}
	return false
}

// serveCall serves the client-request envelope of POST /api/<method>.
func (h *Host) serveCall(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Type    string          `json:"type"`
		RPCID   string          `json:"rpcId"`
		Method  string          `json:"method"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil || req.Type != "client-request" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	method := r.PathValue("method")
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(req.Payload, &p)
	var result any
	switch method {
	case "session.create":
		id := "session-" + newID()
		h.mu.Lock()
		h.sessions = append(h.sessions, id)
		h.mu.Unlock()
		result = map[string]any{"ok": true, "value": map[string]any{"sessionId": id, "agentPreset": "default"}}
	case "session.cancel":
		h.Interrupt(p.SessionID)
		result = map[string]any{"ok": true, "value": map[string]any{}}
	case "session.list":
		h.mu.Lock()
		list := make([]map[string]any, len(h.sessions))
		for i, s := range h.sessions {
			list[i] = map[string]any{"sessionId": s}
		}
		h.mu.Unlock()
		result = map[string]any{"ok": true, "value": list}
	default:
		result = map[string]any{"ok": false, "error": map[string]any{"code": "unknown-method", "message": method, "details": map[string]any{}}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "server-response", "rpcId": req.RPCID, "result": result})
}

// frameItem is an AskUserQuestionItem as the host sends it: multiSelect
// and options always present.
type frameItem struct {
	ID          string               `json:"id"`
	Question    string               `json:"question"`
	Detail      string               `json:"detail,omitempty"`
	Header      string               `json:"header,omitempty"`
	Options     []interaction.Option `json:"options"`
	MultiSelect bool                 `json:"multiSelect"`
	Intent      *interaction.Intent  `json:"intent,omitempty"`
}

type questionPayload struct {
	Type      string      `json:"type"`
	SessionID string      `json:"sessionId"`
	Questions []frameItem `json:"questions"`
}

type resolvedPayload struct {
	Type          string `json:"type"`
	SessionID     string `json:"sessionId"`
	QuestionRPCID string `json:"questionRpcId"`
	Outcome       string `json:"outcome"`
}

// frame returns {"type":"server-request","rpcId","method","payload"}.
func frame(rpcID, method string, payload any) []byte {
	raw, err := json.Marshal(struct {
		Type    string `json:"type"`
		RPCID   string `json:"rpcId"`
		Method  string `json:"method"`
		Payload any    `json:"payload"`
	}{"server-request", rpcID, method, payload})
	if err != nil {
		panic(err)
	}
	return raw
}

func compact(raw []byte) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// newID returns a random UUID (version 4) string.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// loopback reports whether a Host header names a loopback host.
func loopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
