package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// rawFrame is a frame the fake sent to a bare client.
type rawFrame struct {
	Type       string          `json:"type"`
	Reason     string          `json:"reason"`
	EnvelopeID string          `json:"envelope_id"`
	Payload    json.RawMessage `json:"payload"`
	Num        int             `json:"num_connections"`
}

// dialRaw opens a Socket Mode URL and dials it with a bare client, without
// reading anything.
func dialRaw(t *testing.T, srv *Server) *websocket.Conn {
	t.Helper()
	_, wsURL, err := newAPI(t, srv).StartSocketModeContext(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func readFrame(t *testing.T, conn *websocket.Conn) rawFrame {
	t.Helper()
	var f rawFrame
	if err := conn.ReadJSON(&f); err != nil {
		t.Fatalf("reading a frame: %v", err)
	}
	return f
}

// acker reads a bare client's frames after hello until the connection
// ends, acks every envelope when ack is set, and reports the envelopes.
func acker(conn *websocket.Conn, ack bool) <-chan rawFrame {
	out := make(chan rawFrame, 100)
	go func() {
		defer close(out)
		for {
			var f rawFrame
			if err := conn.ReadJSON(&f); err != nil {
				return
			}
			if f.EnvelopeID == "" {
				continue
			}
			if ack && conn.WriteJSON(map[string]any{"envelope_id": f.EnvelopeID}) != nil {
				return
			}
			out <- f
		}
	}()
	return out
}

func socketIDs(srv *Server) []int {
	var ids []int
	for _, s := range srv.Sockets() {
		ids = append(ids, s.ID)
	}
	return ids
}

// deliveredTo delivers one envelope and returns the id of the socket it
// went to.
func deliveredTo(t *testing.T, srv *Server) int {
	t.Helper()
	before := map[int]int{}
	for _, s := range srv.Sockets() {
		before[s.ID] = s.Delivered
	}
	if _, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions"}); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, s := range srv.Sockets() {
		if d := s.Delivered - before[s.ID]; d == 1 && got == 0 {
			got = s.ID
		} else if d != 0 {
			t.Fatalf("one envelope delivered to several sockets: %+v", srv.Sockets())
		}
	}
	if got == 0 {
		t.Fatalf("envelope acked but delivered to no live socket: %+v", srv.Sockets())
	}
	return got
}

// Each envelope goes to exactly one live socket, in turn, and a socket that
// closed drops out of the turn without the next one being skipped or served
// twice.
func TestRoundRobinOverLiveSockets(t *testing.T) {
	srv := newServer(t, Config{})
	var conns []*websocket.Conn
	var got []<-chan rawFrame
	for range 3 {
		c := dialRaw(t, srv)
		readFrame(t, c) // hello
		conns = append(conns, c)
		got = append(got, acker(c, true))
	}
	ids := socketIDs(srv)
	if len(ids) != 3 {
		t.Fatalf("sockets %v", ids)
	}
	var seq []int
	for range 4 {
		seq = append(seq, deliveredTo(t, srv))
	}
	want := []int{ids[0], ids[1], ids[2], ids[0]}
	if !equalInts(seq, want) {
		t.Fatalf("deliveries went to %v, want %v", seq, want)
	}
	conns[1].Close() // the socket next in turn goes away
	if err := srv.WaitFor(testCtx(t), func() bool { return srv.Connections() == 2 }); err != nil {
		t.Fatal(err)
	}
	seq = seq[:0]
	for range 4 {
		seq = append(seq, deliveredTo(t, srv))
	}
	if want := []int{ids[2], ids[0], ids[2], ids[0]}; !equalInts(seq, want) {
		t.Fatalf("after socket %d closed deliveries went to %v, want %v", ids[1], seq, want)
	}
	if s := srv.Sockets(); len(s) != 2 || s[0].Delivered != 4 || s[0].Acked != 4 || s[1].Delivered != 3 || s[1].Acked != 3 {
		t.Fatalf("sockets %+v", s)
	}
	n := 0
	for range got[1] { // closed when the client's read failed
		n++
	}
	if n != 1 {
		t.Fatalf("the closed client read %d envelopes, want 1", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Slack allows 10 connections per app: an 11th gets a too_many_websockets
// disconnect instead of hello; once one closes, a new one is accepted.
func TestEleventhSocketRefused(t *testing.T) {
	srv := newServer(t, Config{})
	var conns []*websocket.Conn
	for i := range 10 {
		c := dialRaw(t, srv)
		if f := readFrame(t, c); f.Type != "hello" || f.Num != i+1 {
			t.Fatalf("connection %d: first frame %+v", i+1, f)
		}
		conns = append(conns, c)
	}
	c := dialRaw(t, srv)
	if f := readFrame(t, c); f.Type != "disconnect" || f.Reason != "too_many_websockets" {
		t.Fatalf("11th connection: first frame %+v", f)
	}
	if _, _, err := c.ReadMessage(); err == nil {
		t.Fatal("11th connection left open")
	}
	if srv.Connections() != 10 || srv.RefusedSockets() != 1 {
		t.Fatalf("%d connections, %d refused", srv.Connections(), srv.RefusedSockets())
	}
	conns[0].Close()
	if err := srv.WaitFor(testCtx(t), func() bool { return srv.Connections() == 9 }); err != nil {
		t.Fatal(err)
	}
	if f := readFrame(t, dialRaw(t, srv)); f.Type != "hello" || f.Num != 10 {
		t.Fatalf("connection after one closed: first frame %+v", f)
	}
}

func openConnection(t *testing.T, srv *Server) (status int, retryAfter string, body map[string]any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(testCtx(t), http.MethodPost, srv.APIURL()+"apps.connections.open", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+srv.cfg.AppToken)
	req.Header.Set("Content-Type", "application/json")
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), body
}

func TestConnectionsOpenRateLimited(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{Now: clock.Now, ConnectionsOpenPerMinute: 30, ConnectionsOpenBurst: 2})
	for i := range 2 {
		if status, _, body := openConnection(t, srv); status != http.StatusOK || body["ok"] != true {
			t.Fatalf("call %d within the burst: %d %v", i+1, status, body)
		}
	}
	status, retry, body := openConnection(t, srv)
	if status != http.StatusTooManyRequests || retry != "2" || body["error"] != "ratelimited" {
		t.Fatalf("call beyond the burst: %d Retry-After %q %v", status, retry, body)
	}
	// slack-go sees Slack's wire form: a RateLimitedError with the wait.
	_, _, err := newAPI(t, srv).StartSocketModeContext(testCtx(t))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 2*time.Second {
		t.Fatalf("slack-go got %v", err)
	}
	clock.Advance(2 * time.Second) // one token at 30 a minute
	if status, _, _ := openConnection(t, srv); status != http.StatusOK {
		t.Fatalf("after the wait: %d", status)
	}
	if status, _, _ := openConnection(t, srv); status != http.StatusTooManyRequests {
		t.Fatalf("second call after one token: %d", status)
	}
	calls, limited := 0, 0
	for _, c := range srv.Calls() {
		if c.Method == "apps.connections.open" {
			calls++
			if c.Error == "ratelimited" {
				limited++
			}
		}
	}
	if calls != 6 || limited != 3 || srv.CallCount("apps.connections.open") != 6 {
		t.Fatalf("%d calls recorded, %d rate limited", calls, limited)
	}
}

func TestConnectionsOpenLimitDefaultsAndOff(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{Now: clock.Now})
	for i := range 20 {
		if status, _, _ := openConnection(t, srv); status != http.StatusOK {
			t.Fatalf("default burst: call %d answered %d", i+1, status)
		}
	}
	if status, retry, _ := openConnection(t, srv); status != http.StatusTooManyRequests || retry != "1" {
		t.Fatalf("21st call at once: %d Retry-After %q", status, retry)
	}
	off := newServer(t, Config{Now: clock.Now, ConnectionsOpenPerMinute: -1})
	for i := range 50 {
		if status, _, _ := openConnection(t, off); status != http.StatusOK {
			t.Fatalf("unlimited: call %d answered %d", i+1, status)
		}
	}
}

// An acked envelope is never delivered again, also not on the connection
// that follows a reconnect.
func TestAckedEnvelopeNeverResent(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, nil)
	<-b.hellos
	ctx := testCtx(t)
	if _, err := srv.Deliver(ctx, map[string]any{"type": "block_actions", "callback_id": "first"}); err != nil {
		t.Fatal(err)
	}
	if cb := b.next(t); cb.CallbackID != "first" {
		t.Fatalf("got %q", cb.CallbackID)
	}
	srv.Disconnect("refresh_requested")
	<-b.hellos
	if _, err := srv.Deliver(ctx, map[string]any{"type": "block_actions", "callback_id": "sentinel"}); err != nil {
		t.Fatal(err)
	}
	if cb := b.next(t); cb.CallbackID != "sentinel" {
		t.Fatalf("after the reconnect the bot got %q before the sentinel", cb.CallbackID)
	}
	if s := srv.Sockets(); len(s) != 1 || s[0].Delivered != 1 || s[0].Acked != 1 {
		t.Fatalf("new socket %+v", s)
	}
}

// An envelope on a socket that closes unacked is not resent to the next
// socket (Slack never retries a click): the person sees an error.
func TestUnackedEnvelopeOnDroppedSocketNotResent(t *testing.T) {
	srv := newServer(t, Config{AckTimeout: 300 * time.Millisecond})
	a := dialRaw(t, srv)
	readFrame(t, a)
	type result struct{ err error }
	done := make(chan result, 1)
	go func() {
		_, err := srv.Person("U1").Raw(testCtx(t), map[string]any{
			"type": "block_actions", "container": map[string]any{"type": "message", "channel_id": "C1", "message_ts": "1.2"},
			"actions": []any{map[string]any{"action_id": "lost"}},
		})
		done <- result{err}
	}()
	if f := readFrame(t, a); f.EnvelopeID == "" {
		t.Fatalf("frame %+v", f)
	}
	a.Close()
	if err := srv.WaitFor(testCtx(t), func() bool { return srv.Connections() == 0 }); err != nil {
		t.Fatal(err)
	}
	bConn := dialRaw(t, srv)
	readFrame(t, bConn)
	frames := acker(bConn, true)
	if r := <-done; !errors.Is(r.err, ErrAckTimeout) {
		t.Fatalf("Raw = %v, want ErrAckTimeout", r.err)
	}
	if _, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions", "callback_id": "sentinel"}); err != nil {
		t.Fatal(err)
	}
	if f := <-frames; !strings.Contains(string(f.Payload), "sentinel") {
		t.Fatalf("the new socket got %s before the sentinel", f.Payload)
	}
	fails := srv.Person("U1").FailedInteractions()
	if len(fails) != 1 || fails[0].ActionID != "lost" || fails[0].Channel != "C1" || fails[0].TS != "1.2" || !fails[0].Delivered || fails[0].Text != ActionTimeoutText {
		t.Fatalf("failed interactions %+v", fails)
	}
}

// A click not acked within the ack timeout is shown to the person as
// failed and counted; an acked one is not, and neither is a late ack able
// to undo the failure.
func TestUnackedClickIsAFailedInteraction(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{AckTimeout: 200 * time.Millisecond, Now: clock.Now})
	release := make(chan struct{})
	startBot(t, srv, func(b *bot, req socketmode.Request, cb slack.InteractionCallback) {
		if cb.Type == slack.InteractionTypeBlockActions && cb.ActionCallback.BlockActions[0].ActionID == "slow" {
			go func() { <-release; b.ack(req, nil) }()
			return
		}
		if cb.Type == slack.InteractionTypeViewSubmission {
			return // never acked
		}
		b.ack(req, nil)
	})
	defer close(release)
	events, cancel := srv.Subscribe()
	defer cancel()
	api := newAPI(t, srv)
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("q", false), slack.MsgOptionBlocks(
		slack.NewActionBlock("b1", slack.NewButtonBlockElement("fast", "f", txt("Fast")), slack.NewButtonBlockElement("slow", "s", txt("Slow")))))
	if err != nil {
		t.Fatal(err)
	}
	alice := srv.Person("U1")
	ctx := testCtx(t)
	if _, err := alice.Click(ctx, "C1", ts, ByActionID("fast")); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Click(ctx, "C1", ts, ByActionID("slow")); !errors.Is(err, ErrAckTimeout) {
		t.Fatalf("unacked click: %v", err)
	}
	want := FailedInteraction{Type: "block_actions", User: "U1", Channel: "C1", TS: ts, ActionID: "slow", Text: ActionTimeoutText, Delivered: true, At: clock.Now()}
	fails := alice.FailedInteractions()
	if len(fails) != 1 || fails[0].EnvelopeID == "" {
		t.Fatalf("failed interactions %+v", fails)
	}
	fails[0].EnvelopeID = ""
	if fails[0] != want || srv.UnackedInteractions() != 1 || len(srv.Person("U2").FailedInteractions()) != 0 {
		t.Fatalf("failed %+v, want %+v; %d counted", fails[0], want, srv.UnackedInteractions())
	}
	for ev := range events {
		if ev.Type == EventInteractionFailed {
			if ev.User != "U1" || ev.Channel != "C1" || ev.TS != ts {
				t.Fatalf("event %+v", ev)
			}
			break
		}
	}
	// A late ack is read (its latency recorded) but the failure stays.
	acks := len(srv.AckLatencies())
	release <- struct{}{}
	if err := srv.WaitFor(ctx, func() bool { return len(srv.AckLatencies()) == acks+1 }); err != nil {
		t.Fatal(err)
	}
	if srv.UnackedInteractions() != 1 {
		t.Fatal("a late ack undid the failure")
	}

	// The deadline runs whoever waits: a caller that gives up first does
	// not hide the failure; a submission gets the modal's error.
	short, cancelShort := context.WithCancel(ctx)
	cancelShort()
	_, err = srv.Person("U2").Raw(short, map[string]any{"type": "view_submission", "view": map[string]any{"id": "V9"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Raw with a cancelled ctx: %v", err)
	}
	if err := srv.WaitFor(ctx, func() bool { return srv.UnackedInteractions() == 2 }); err != nil {
		t.Fatal(err)
	}
	if f := srv.Person("U2").FailedInteractions(); len(f) != 1 || f[0].Type != "view_submission" || f[0].ViewID != "V9" || f[0].Text != SubmissionTimeoutText {
		t.Fatalf("submission %+v", f)
	}
	// Other interactive payloads fail the call but show the person nothing.
	if _, err := srv.Person("U2").Raw(ctx, map[string]any{"type": "view_closed"}); err != nil {
		t.Fatalf("view_closed: %v", err)
	}
	if n := len(srv.FailedInteractions()); n != 2 {
		t.Fatalf("%d failed interactions", n)
	}
}

// With no live socket the click fails at the ack deadline, not whenever the
// caller gives up.
func TestNoSocketWithinAckDeadline(t *testing.T) {
	srv := newServer(t, Config{AckTimeout: 100 * time.Millisecond})
	_, err := srv.Person("U1").Raw(testCtx(t), map[string]any{"type": "block_actions", "actions": []any{map[string]any{"action_id": "x"}}})
	if !errors.Is(err, ErrNoConnection) || errors.Is(err, ErrAckTimeout) {
		t.Fatalf("err %v", err)
	}
	if f := srv.FailedInteractions(); len(f) != 1 || f[0].Delivered || f[0].ActionID != "x" {
		t.Fatalf("failed %+v", f)
	}
}

func TestSocketFaults(t *testing.T) {
	t.Run("disconnect after hello", func(t *testing.T) {
		srv := newServer(t, Config{})
		srv.FailNextSockets(1, SocketFault{Action: SocketDisconnect, Reason: "warning"})
		c := dialRaw(t, srv)
		if f := readFrame(t, c); f.Type != "hello" {
			t.Fatalf("first frame %+v", f)
		}
		if f := readFrame(t, c); f.Type != "disconnect" || f.Reason != "warning" {
			t.Fatalf("second frame %+v", f)
		}
		if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
			t.Fatalf("then %v, want a normal close", err)
		}
		if f := readFrame(t, dialRaw(t, srv)); f.Type != "hello" || f.Num != 1 {
			t.Fatalf("next connection (no fault left): %+v", f)
		}
	})
	t.Run("cut after hello", func(t *testing.T) {
		srv := newServer(t, Config{})
		srv.FailNextSockets(1, SocketFault{Action: SocketCut})
		c := dialRaw(t, srv)
		readFrame(t, c)
		if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseAbnormalClosure) {
			t.Fatalf("after hello %v, want the connection cut without a close frame", err)
		}
	})
	t.Run("cut before hello", func(t *testing.T) {
		srv := newServer(t, Config{})
		srv.FailNextSockets(1, SocketFault{Action: SocketCutBeforeHello})
		if _, _, err := dialRaw(t, srv).ReadMessage(); !websocket.IsCloseError(err, websocket.CloseAbnormalClosure) {
			t.Fatalf("first read %v, want the connection cut", err)
		}
	})
	t.Run("disconnect later", func(t *testing.T) {
		srv := newServer(t, Config{})
		srv.FailNextSockets(1, SocketFault{Action: SocketDisconnect, After: 50 * time.Millisecond})
		c := dialRaw(t, srv)
		readFrame(t, c)
		if f := readFrame(t, c); f.Type != "disconnect" || f.Reason != "refresh_requested" {
			t.Fatalf("frame %+v", f)
		}
	})
	t.Run("hold hello", func(t *testing.T) {
		srv := newServer(t, Config{})
		srv.FailNextSockets(1, SocketFault{Action: SocketHoldHello})
		srv.FailNextSockets(1, SocketFault{Action: SocketHoldHello, After: 20 * time.Millisecond})
		held := dialRaw(t, srv)
		late := dialRaw(t, srv)
		if f := readFrame(t, late); f.Type != "hello" || f.Num != 1 {
			t.Fatalf("released connection: %+v (the held one must not count)", f)
		}
		if f := readFrame(t, dialRaw(t, srv)); f.Type != "hello" || f.Num != 2 {
			t.Fatalf("normal connection: %+v", f)
		}
		srv.Close()
		if _, _, err := held.ReadMessage(); err == nil {
			t.Fatal("held connection open after Close")
		}
	})
	t.Run("slack-go reconnects", func(t *testing.T) {
		srv := newServer(t, Config{})
		srv.FailNextSockets(2, SocketFault{Action: SocketDisconnect})
		srv.FailNextSockets(1, SocketFault{Action: SocketCut})
		startBot(t, srv, nil)
		err := srv.WaitFor(testCtx(t), func() bool {
			return srv.CallCount("apps.connections.open") == 4 && srv.Connections() == 1
		})
		if err != nil {
			t.Fatalf("%d opens, %d connections", srv.CallCount("apps.connections.open"), srv.Connections())
		}
		if _, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions"}); err != nil {
			t.Fatal(err)
		}
	})
}

// Sockets can be cut or disconnected one at a time; Cut cuts them all.
func TestCutAndDisconnectSockets(t *testing.T) {
	srv := newServer(t, Config{})
	a := dialRaw(t, srv)
	readFrame(t, a) // a is registered before b is dialled
	b := dialRaw(t, srv)
	readFrame(t, b)
	ids := socketIDs(srv)
	if !srv.CutSocket(ids[0]) || srv.CutSocket(ids[0]) {
		t.Fatal("CutSocket of a live socket, then of a gone one")
	}
	if _, _, err := a.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseAbnormalClosure) {
		t.Fatalf("cut socket: %v", err)
	}
	if !srv.DisconnectSocket(ids[1], "link_disabled") || srv.DisconnectSocket(99, "x") {
		t.Fatal("DisconnectSocket")
	}
	if f := readFrame(t, b); f.Type != "disconnect" || f.Reason != "link_disabled" {
		t.Fatalf("frame %+v", f)
	}
	if srv.Connections() != 0 {
		t.Fatalf("%d connections", srv.Connections())
	}
	c := dialRaw(t, srv)
	readFrame(t, c)
	srv.Cut()
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseAbnormalClosure) {
		t.Fatalf("after Cut: %v", err)
	}
}
