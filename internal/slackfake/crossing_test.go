package slackfake

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

type delivered struct {
	ack json.RawMessage
	err error
}

// readEnvelopeID reads the next frame of conn, an envelope, and returns
// its id.
func readEnvelopeID(t *testing.T, conn *websocket.Conn) string {
	t.Helper()
	var env struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
	}
	if err := conn.ReadJSON(&env); err != nil || env.Type != "interactive" || env.EnvelopeID == "" {
		t.Fatalf("envelope %+v %v", env, err)
	}
	return env.EnvelopeID
}

// An envelope's ack is accepted on another connection of the app than the
// one it went to (the fake's pending envelopes are app-wide).
func TestAckOnASiblingConnection(t *testing.T) {
	srv := newServer(t, Config{})
	first, second := rawSocket(t, srv), rawSocket(t, srv)
	done := make(chan delivered, 1)
	go func() {
		ack, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions"})
		done <- delivered{ack, err}
	}()
	id := readEnvelopeID(t, first) // round robin starts with the first connection
	if err := second.WriteJSON(map[string]any{"envelope_id": id, "payload": map[string]any{"on": "second"}}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || string(r.ack) != `{"on":"second"}` {
		t.Fatalf("ack on the sibling: %s %v", r.ack, r.err)
	}
	if n := srv.UnackedInteractions(); n != 0 {
		t.Fatalf("%d unacked", n)
	}
}

// DeliverAtClientClose writes its envelope to the connection whose client
// sent a close frame, after that frame: the client reads it, then the
// fake's answering close frame, and can ack it only on another connection.
func TestDeliverAtClientClose(t *testing.T) {
	srv := newServer(t, Config{AckTimeout: time.Second})
	closing, sibling := rawSocket(t, srv), rawSocket(t, srv)
	done := make(chan delivered, 2)
	atClose := func(payload any) {
		t.Helper()
		wait, err := srv.DeliverAtClientClose(payload)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			ack, err := wait(testCtx(t))
			done <- delivered{ack, err}
		}()
	}
	atClose(map[string]any{"type": "block_actions"})
	msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
	if err := closing.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	id := readEnvelopeID(t, closing)
	var ce *websocket.CloseError
	if _, _, err := closing.ReadMessage(); !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
		t.Fatalf("after the envelope: %v, want the fake's close frame", err)
	}
	if err := closing.WriteJSON(map[string]any{"envelope_id": id}); !errors.Is(err, websocket.ErrCloseSent) {
		t.Fatalf("ack on the closed connection: %v, want ErrCloseSent", err)
	}
	if err := sibling.WriteJSON(map[string]any{"envelope_id": id, "payload": map[string]any{"on": "sibling"}}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || string(r.ack) != `{"on":"sibling"}` {
		t.Fatalf("ack on the sibling: %s %v", r.ack, r.err)
	}
	// Unanswered, such an envelope fails in front of the person as any.
	atClose(map[string]any{"type": "block_actions", "user": map[string]any{"id": "U1"}})
	if err := sibling.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	readEnvelopeID(t, sibling)
	if r := <-done; !errors.Is(r.err, ErrAckTimeout) {
		t.Fatalf("unacked envelope at a close: %v, want ErrAckTimeout", r.err)
	}
	if n := srv.UnackedInteractions(); n != 1 {
		t.Fatalf("%d unacked, want 1", n)
	}
}
