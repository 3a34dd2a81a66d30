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

// pendingAck is an envelope waiting for its ack. Its deadline runs from
// the start of Deliver whoever waits for it: once Deliver's caller gave up,
// a late ack still counts and a missed one is still recorded.
type pendingAck struct {
	id       string
	ch       chan json.RawMessage // receives the ack's payload
	expired  chan struct{}        // closed when the deadline passed unacked
	timer    *time.Timer
	payload  json.RawMessage
	sent     time.Time // zero until written to a socket
	timedOut bool
}

type envelope struct {
	EnvelopeID             string          `json:"envelope_id"`
	Type                   string          `json:"type"`
	Payload                json.RawMessage `json:"payload"`
	AcceptsResponsePayload bool            `json:"accepts_response_payload"`
}

// Deliver sends payload in an "interactive" envelope to exactly one live
// socket (round robin over the live sockets, as Slack does) and waits for
// its ack. It returns the ack's payload (nil when the ack carried none), or
// an error: ErrNoConnection when no socket is live before ctx ends
// (wrapping ctx.Err()) or before the ack deadline, ErrAckTimeout,
// ctx.Err(), ErrClosed, or a marshalling error.
//
// As in Slack an interactive envelope is sent once: it is not resent when
// the socket it went to closes, nor after a reconnect, acked or not. When
// no ack is read within Config.AckTimeout of the call, a block_actions or
// view_submission payload is recorded as failed in front of the person
// (FailedInteractions), also when ctx ended first.
func (s *Server) Deliver(ctx context.Context, payload any) (json.RawMessage, error) {
	return s.deliver(ctx, "interactive", payload, true)
}

// deliver sends payload in an envelope of type typ (interactive,
// events_api) and waits for its ack, as Deliver.
func (s *Server) deliver(ctx context.Context, typ string, payload any, acceptsResponse bool) (json.RawMessage, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("slackfake: marshalling payload: %w", err)
	}
	env := envelope{EnvelopeID: newUUID(), Type: typ, Payload: raw, AcceptsResponsePayload: acceptsResponse}
	p := &pendingAck{id: env.EnvelopeID, ch: make(chan json.RawMessage, 1), expired: make(chan struct{}), payload: raw}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.sock.pending[env.EnvelopeID] = p
	p.timer = time.AfterFunc(s.cfg.AckTimeout, func() { s.expire(p) })
	web := s.web
	s.mu.Unlock()
	if web.interactivity != "" {
		s.wg.Go(func() { s.post(web, typ, p) })
		return s.awaitAck(ctx, p)
	}
	if err := s.send(ctx, env, p); err != nil {
		return nil, err
	}
	return s.awaitAck(ctx, p)
}

// expire runs at an envelope's deadline.
func (s *Server) expire(p *pendingAck) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.sock.pending[p.id] != p || p.timedOut {
		return
	}
	p.timedOut = true
	close(p.expired)
	if p.sent.IsZero() { // never sent: no late ack can come
		delete(s.sock.pending, p.id)
	}
	if f, ok := failedInteraction(p.payload); ok {
		f.EnvelopeID, f.At, f.Delivered = p.id, s.now(), !p.sent.IsZero()
		s.sock.failed = append(s.sock.failed, f)
		s.logf("envelope %s (%s by %s) not acked within %v: the person sees %q", p.id, f.Type, f.User, s.cfg.AckTimeout, f.Text)
		s.emitLocked(Event{Type: EventInteractionFailed, Channel: f.Channel, TS: f.TS, User: f.User, ViewID: f.ViewID})
		return
	}
	s.notifyLocked()
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

// send writes env to one live socket, trying another when the write
// fails (then it did not reach the client) or the socket stopped being
// live after it was picked.
func (s *Server) send(ctx context.Context, env envelope, p *pendingAck) error {
	var frame []byte
	for {
		c, err := s.pickConn(ctx, p)
		if err != nil {
			return err
		}
		c.wmu.Lock()
		s.mu.Lock()
		if !c.live {
			s.mu.Unlock()
			c.wmu.Unlock()
			continue
		}
		now := time.Now()
		p.sent, s.sock.sent = now, now
		c.delivered++
		s.mu.Unlock()
		if frame == nil {
			frame = env.frame()
		}
		err = c.writeFrameLocked(frame)
		c.wmu.Unlock()
		if err == nil {
			return nil
		}
		s.logf("socket %d: writing envelope: %v", c.id, err)
		s.mu.Lock()
		p.sent = time.Time{}
		c.delivered--
		s.mu.Unlock()
		s.dropConn(c, websocketGoingAway, "")
	}
}

// pickConn returns the live socket after the one that got the latest
// envelope, in connection order, waiting for one until ctx ends or p's
// deadline passes.
func (s *Server) pickConn(ctx context.Context, p *pendingAck) (*wsConn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if conns := s.sock.conns; len(conns) > 0 {
			c := conns[0]
			for _, x := range conns {
				if x.id > s.sock.lastID {
					c = x
					break
				}
			}
			s.sock.lastID = c.id
			s.mu.Unlock()
			return c, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-p.expired:
			return nil, fmt.Errorf("%w within the ack timeout (Slack shows the person an error)", ErrNoConnection)
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrNoConnection, ctx.Err())
		}
	}
}

func (s *Server) awaitAck(ctx context.Context, p *pendingAck) (json.RawMessage, error) {
	select {
	case ack := <-p.ch:
		return ack, nil
	case <-p.expired:
		return nil, ErrAckTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.done:
		return nil, ErrClosed
	}
}

// stopPendingLocked stops every deadline timer (Server.Close). s.mu held.
func (s *Server) stopPendingLocked() {
	for _, p := range s.sock.pending {
		p.timer.Stop()
	}
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
	if s.ackLocked(f.EnvelopeID, f.Payload, fmt.Sprintf("socket %d", c.id)) {
		c.acked++
	}
}

// ackLocked takes the ack of envelope id (its payload; nil or null: none)
// that came by via, and reports whether it was one the fake waited for.
// s.mu held.
func (s *Server) ackLocked(id string, payload json.RawMessage, via string) bool {
	p := s.sock.pending[id]
	if p == nil || p.sent.IsZero() {
		s.logf("%s: ack for unknown or already acked envelope %s", via, id)
		return false
	}
	delete(s.sock.pending, id)
	p.timer.Stop()
	lat := time.Since(p.sent)
	s.sock.acks = append(s.sock.acks, lat)
	s.notifyLocked()
	if p.timedOut {
		s.logf("%s: late ack for %s after %v", via, id, lat)
		return true
	}
	if string(payload) == "null" {
		payload = nil
	}
	p.ch <- payload
	return true
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
