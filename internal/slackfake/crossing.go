package slackfake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/gorilla/websocket"
)

// atClose is an envelope DeliverAtClientClose waits to write.
type atClose struct {
	env     envelope
	p       *pendingAck
	written chan struct{} // closed once env was written (or the write failed)
}

// DeliverAtClientClose is Deliver for the one ordering a test cannot
// otherwise force: the envelope goes to the next connection whose client
// sends a close frame, written when the fake reads that frame and before
// it answers it. The client so reads an envelope after it sent its close
// frame, as it does in Slack when the envelope and the close frame cross
// on the wire; a websocket sends no data after its close frame, so the
// client cannot ack it on that connection (and the fake reads nothing
// more from it), only on another one.
//
// It arms the envelope and returns at once; ack waits for such a close
// (until ctx ends: then the envelope is disarmed), then for the ack as
// Deliver does, with the ack deadline running from the write, and returns
// the same errors.
func (s *Server) DeliverAtClientClose(payload any) (ack func(ctx context.Context) (json.RawMessage, error), err error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("slackfake: marshalling payload: %w", err)
	}
	env := envelope{EnvelopeID: newUUID(), Type: "interactive", Payload: raw, AcceptsResponsePayload: true}
	d := &atClose{env: env, written: make(chan struct{}),
		p: &pendingAck{id: env.EnvelopeID, ch: make(chan json.RawMessage, 1), expired: make(chan struct{}), payload: raw}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.sock.atClose = append(s.sock.atClose, d)
	return func(ctx context.Context) (json.RawMessage, error) {
		select {
		case <-d.written:
		case <-ctx.Done():
			s.mu.Lock()
			s.sock.atClose = slices.DeleteFunc(s.sock.atClose, func(x *atClose) bool { return x == d })
			s.mu.Unlock()
			return nil, fmt.Errorf("%w: no client closed a connection: %w", ErrNoConnection, ctx.Err())
		case <-s.done:
			return nil, ErrClosed
		}
		return s.awaitAck(ctx, d.p)
	}, nil
}

// onClientClose is c's close handler: it writes the envelope a
// DeliverAtClientClose waits to write, if any, then answers the close
// frame as gorilla/websocket's default handler does. It runs on c's
// reader, which reads nothing after it.
func (s *Server) onClientClose(c *wsConn, code int) error {
	s.mu.Lock()
	var d *atClose
	if len(s.sock.atClose) > 0 && !s.closed {
		d, s.sock.atClose = s.sock.atClose[0], s.sock.atClose[1:]
		p := d.p
		s.sock.pending[p.id] = p
		p.timer = time.AfterFunc(s.cfg.AckTimeout, func() { s.expire(p) })
		now := time.Now()
		p.sent, s.sock.sent = now, now
		c.delivered++
	}
	s.mu.Unlock()
	if d != nil {
		c.wmu.Lock()
		if err := c.writeFrameLocked(d.env.frame()); err != nil {
			s.logf("socket %d: writing an envelope at the client's close: %v", c.id, err)
		}
		c.wmu.Unlock()
		close(d.written)
	}
	err := c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
	if err != nil && err != websocket.ErrCloseSent {
		return err
	}
	return nil
}
