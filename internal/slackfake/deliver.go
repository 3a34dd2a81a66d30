package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Errors returned by Deliver and the Person methods.
var (
	// ErrAckTimeout: no ack within Config.AckTimeout (Slack would show the
	// person an error).
	ErrAckTimeout = errors.New("slackfake: no ack within the ack timeout")
	// ErrNoConnection: no Socket Mode connection before ctx ended.
	ErrNoConnection = errors.New("slackfake: no Socket Mode connection")
)

// maxAckBytes: Slack drops acks of 20 KiB or more.
const maxAckBytes = 20 * 1024

type pendingAck struct {
	ch       chan json.RawMessage
	sent     time.Time
	timedOut bool
}

type envelope struct {
	EnvelopeID             string          `json:"envelope_id"`
	Type                   string          `json:"type"`
	Payload                json.RawMessage `json:"payload"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
}

// Deliver sends payload in an "interactive" envelope to one connected socket
// (round-robin) and waits for its ack. It returns the ack's payload (nil
// when the ack carried none), or an error: ErrNoConnection (wrapping
// ctx.Err()) when no socket connects before ctx ends, ErrAckTimeout,
// ctx.Err(), ErrClosed, or a marshalling error.
func (s *Server) Deliver(ctx context.Context, payload any) (json.RawMessage, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("slackfake: marshalling payload: %w", err)
	}
	env := envelope{EnvelopeID: newUUID(), Type: "interactive", Payload: raw, AcceptsResponsePayload: true}
	p := &pendingAck{ch: make(chan json.RawMessage, 1)}
	s.mu.Lock()
	s.sock.pending[env.EnvelopeID] = p
	s.mu.Unlock()
	if err := s.send(ctx, env, p); err != nil {
		s.forgetAck(env.EnvelopeID)
		return nil, err
	}
	return s.awaitAck(ctx, env.EnvelopeID, p)
}

// frame is env as JSON. The payload was compacted by json.Marshal in
// Deliver already: writing env with WriteJSON compacted it a second time,
// a third of the fake's CPU per envelope under load (found by the ack
// benchmark in bench/).
func (env envelope) frame() []byte {
	id, _ := json.Marshal(env.EnvelopeID)
	typ, _ := json.Marshal(env.Type)
	b := make([]byte, 0, len(env.Payload)+len(id)+len(typ)+80)
	b = append(b, `{"envelope_id":`...)
	b = append(b, id...)
	b = append(b, `,"type":`...)
	b = append(b, typ...)
	b = append(b, `,"payload":`...)
	b = append(b, env.Payload...)
	b = append(b, `,"accepts_response_payload":`...)
	b = strconv.AppendBool(b, env.AcceptsResponsePayload)
	return append(b, '}')
}

// send writes env to a connected socket, trying another when a write fails.
func (s *Server) send(ctx context.Context, env envelope, p *pendingAck) error {
	for {
		c, err := s.pickConn(ctx)
		if err != nil {
			return err
		}
		c.wmu.Lock()
		s.mu.Lock()
		p.sent = time.Now()
		s.sock.sent = p.sent
		s.mu.Unlock()
		err = c.writeFrameLocked(env.frame())
		c.wmu.Unlock()
		if err == nil {
			return nil
		}
		s.logf("socket %d: writing envelope: %v", c.id, err)
		s.dropConn(c, websocketGoingAway, "")
	}
}

func (s *Server) pickConn(ctx context.Context) (*wsConn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if n := len(s.sock.conns); n > 0 {
			c := s.sock.conns[s.sock.rr%n]
			s.sock.rr++
			s.mu.Unlock()
			return c, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNoConnection, ctx.Err())
		}
	}
}

func (s *Server) awaitAck(ctx context.Context, id string, p *pendingAck) (json.RawMessage, error) {
	t := time.NewTimer(s.cfg.AckTimeout)
	defer t.Stop()
	select {
	case ack := <-p.ch:
		return ack, nil
	case <-t.C:
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case ack := <-p.ch: // arrived together with the timer
			return ack, nil
		default:
		}
		p.timedOut = true
		return nil, ErrAckTimeout
	case <-ctx.Done():
		s.forgetAck(id)
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
}

func (s *Server) forgetAck(id string) {
	s.mu.Lock()
	delete(s.sock.pending, id)
	s.mu.Unlock()
}

// handleFrame reads a client frame: an ack, or something logged and ignored.
func (s *Server) handleFrame(c *wsConn, data []byte) {
	var f struct {
		EnvelopeID string          `json:"envelope_id"`
		Payload    json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &f); err != nil || f.EnvelopeID == "" {
		s.logf("socket %d: ignoring a frame that is not an ack: %.200s", c.id, data)
		return
	}
	if len(data) >= maxAckBytes {
		s.logf("socket %d: dropping ack of %d bytes for %s (Slack drops acks of 20 KiB or more)", c.id, len(data), f.EnvelopeID)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.sock.pending[f.EnvelopeID]
	if p == nil {
		s.logf("socket %d: ack for unknown or already acked envelope %s", c.id, f.EnvelopeID)
		return
	}
	delete(s.sock.pending, f.EnvelopeID)
	lat := time.Since(p.sent)
	s.sock.acks = append(s.sock.acks, lat)
	if p.timedOut {
		s.logf("socket %d: late ack for %s after %v", c.id, f.EnvelopeID, lat)
		return
	}
	if string(f.Payload) == "null" {
		f.Payload = nil
	}
	p.ch <- f.Payload
}

// LastSent returns when the latest envelope was written to a socket (the
// zero time before the first): with one sender, the moment a payload
// left "Slack", after the fake built it.
func (s *Server) LastSent() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.sent
}

// AckLatencies returns the time from writing each envelope to reading its
// ack, in ack order (late acks included, unanswered envelopes not).
func (s *Server) AckLatencies() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sock.acks)
}

// AckStats returns the nearest-rank p50 and p99, the maximum and the count
// of AckLatencies; all zero when no ack was read.
func (s *Server) AckStats() (p50, p99, maxLat time.Duration, n int) {
	lat := s.AckLatencies()
	if len(lat) == 0 {
		return 0, 0, 0, 0
	}
	slices.Sort(lat)
	rank := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(lat)))) - 1
		return lat[max(0, min(i, len(lat)-1))]
	}
	return rank(0.50), rank(0.99), lat[len(lat)-1], len(lat)
}
