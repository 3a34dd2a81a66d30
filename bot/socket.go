package bot

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/internal/workslots"
)

// Socket is the bot's own Socket Mode connection, on slack-go's Web API
// (apps.connections.open) and wire types (socketmode.Request, Response) and
// the gorilla/websocket slack-go dials with, rather than slack-go's
// socketmode.Client, which decodes every payload in full (message blocks
// included) before the app sees the envelope. Here the reader acks an
// envelope that asks for no change as soon as it has read its id.
//
// An envelope that may ask for a change (block_actions, view_submission)
// must not be lost once acked: Slack never resends an acked payload. With
// a Journal, the reader appends a block_actions envelope to it and acks it
// at once (the journal replays it after a crash); without one, and for a
// view_submission always (its ack may carry errors), the handler acks the
// envelope only once the change is stored.
const (
	// pingTimeout: Slack pings every few seconds; with no frame and no
	// ping for this long the connection is taken for dead (as slack-go).
	pingTimeout = 30 * time.Second
	// writeTimeout bounds one ack or pong write.
	writeTimeout = 5 * time.Second
	// maxAckBytes: slack-go refuses acks of 20,480 bytes or more; so do we.
	maxAckBytes = 20480
	// maxFrameBytes caps one frame from Slack (a 50-block message and its
	// state are well under 1 MB).
	maxFrameBytes = 8 << 20
	// settleWait bounds how long an ended connection stays open for the
	// acks of envelopes read from it (Slack's own limit is 3 s).
	settleWait = 5 * time.Second
	// inboundBuffer is how many read envelopes may wait for the dispatcher
	// before the reader stops reading.
	inboundBuffer = 1024
	// backlogged is how many envelopes waiting for the dispatcher make it
	// decode without a work slot: the reader must not stall on a full
	// buffer (it would stop acking), so when the post-ack work falls
	// behind it gets every core.
	backlogged = 64
)

// DefaultMinLife: Slack refreshes a connection after hours, so one that
// ends within seconds of its hello is a failing link (or a Slack that
// disconnects at once), which must be backed off, not redialled in a loop.
const DefaultMinLife = 10 * time.Second

// errDisconnectRequested: Slack asked us to reconnect (refresh, warning).
var errDisconnectRequested = errors.New("bot: slack asked to reconnect")

// EnvelopeHandler is what a Socket hands what it reads to.
type EnvelopeHandler interface {
	// Hello is called for each hello, with the app id Slack announces.
	Hello(appID string)
	// Interactive handles an interactive envelope. It must settle env
	// exactly once, from any goroutine: Ack it once what it asks for is
	// stored (Slack never resends an acked payload), or Drop it unacked
	// when that failed (Slack then tells the person). For an envelope the
	// reader journaled and acked, Ack marks its journal entry done and
	// Drop leaves it for the next start's replay. It is called in read
	// order, by a connection's dispatcher or, for a journaled envelope, by
	// the order line it was put on before its ack, so it must not wait for
	// I/O itself.
	Interactive(ctx context.Context, env *Envelope)
}

// EventHandler is implemented by an EnvelopeHandler that takes Events API
// events (events_api envelopes, acked by the Socket before Event is
// called: an event asks for nothing to be stored). Event must not block.
type EventHandler interface {
	Event(ctx context.Context, ev EventCallback)
}

// EventCallback is the part of an events_api payload's event the bot
// reads.
type EventCallback struct {
	Type string `json:"type"`
	User string `json:"user"`
	Tab  string `json:"tab"`
	// Tokens are a tokens_revoked event's: the users (bots) whose tokens
	// were revoked.
	Tokens struct {
		Bot []string `json:"bot"`
	} `json:"tokens"`
	// TeamIDs are a team_access_granted or team_access_revoked event's:
	// the workspaces an org-wide install was added to or taken from.
	TeamIDs []string `json:"team_ids"`
	// Team is the workspace of the callback (its team_id), Enterprise its
	// Grid organization (enterprise_id) and OrgWide its
	// is_enterprise_install, set by the transport.
	Team, Enterprise string `json:"-"`
	OrgWide          bool   `json:"-"`
}

// key is the installation key the event came through (as asks are
// stamped): its enterprise for an org-wide install, else its team.
func (ev EventCallback) key() string { return payloadKey(ev.Enterprise, ev.Team, ev.OrgWide) }

// decodeEvent reads the event of an events_api frame; ok is false when it
// does not decode.
func decodeEvent(frame []byte) (ev EventCallback, ok bool) {
	var env struct {
		Payload struct {
			Event               EventCallback `json:"event"`
			TeamID              string        `json:"team_id"`
			EnterpriseID        string        `json:"enterprise_id"`
			IsEnterpriseInstall bool          `json:"is_enterprise_install"`
		} `json:"payload"`
	}
	if json.Unmarshal(frame, &env) != nil {
		return ev, false
	}
	env.Payload.Event.Team = env.Payload.TeamID
	env.Payload.Event.Enterprise, env.Payload.Event.OrgWide = env.Payload.EnterpriseID, env.Payload.IsEnterpriseInstall
	return env.Payload.Event, true
}

// Envelope is one interactive envelope read from a connection, decoded.
type Envelope struct {
	ID      string
	Payload *callback
	// ackFn writes the ack; nil once the reader acked the envelope as it
	// read it (its ack could carry nothing and it asks for no change, or
	// it is journaled).
	ackFn func(payload any) error
	// journal and seq: the journal entry of an envelope the reader
	// journaled before acking it (seq 0: none), marked done when the
	// envelope is settled by Ack.
	journal Journal
	seq     uint64
	// replayed: the envelope comes from the journal at start-up, acked by
	// an earlier process; its trigger has expired and the person may have
	// been told its outcome already.
	replayed bool
	settled  atomic.Bool
	release  func() // tells the connection (or the replay) the envelope is settled
	log      zerolog.Logger
}

// Ack answers the envelope, with payload as the ack's payload (nil:
// none). For an envelope the reader acked already it writes nothing (a
// payload is then logged as lost) and marks its journal entry done; a
// second settling is logged.
func (e *Envelope) Ack(payload any) {
	if e.ackFn == nil {
		if payload != nil {
			e.log.Error().Str("envelope", e.ID).Msg("envelope acked before its ack payload was known")
		}
		if e.seq != 0 && e.settle() {
			if err := e.journal.Done(e.seq); err != nil {
				// Replayed at the next start, where its act is refused
				// or repeated (acts are compare-and-set).
				e.log.Warn().Err(err).Str("envelope", e.ID).Msg("journal entry not marked done")
			}
			e.released()
		}
		return
	}
	if !e.settle() {
		return
	}
	// The connection is told only after the write: it closes once every
	// envelope read from it is settled, which must not beat the ack.
	if err := e.ackFn(payload); err != nil {
		e.log.Warn().Err(err).Msg("ack failed")
	}
	e.released()
}

// Drop settles the envelope without an ack: what it asked for could not
// be stored, and Slack shows the person an error instead of a silent
// loss. A journaled envelope was acked already: its entry is left
// outstanding, so that the next start replays it.
func (e *Envelope) Drop() {
	if e.seq != 0 && e.settle() {
		e.log.Error().Str("envelope", e.ID).Uint64("seq", e.seq).Msg("acked envelope whose change was not stored: kept in the journal, replayed at the next start")
		e.released()
		return
	}
	if e.ackFn != nil && e.settle() {
		e.log.Warn().Str("envelope", e.ID).Msg("envelope left unacked: its change was not stored")
		e.released()
	}
}

// settle marks the envelope settled; false (logged) when it was already.
func (e *Envelope) settle() bool {
	if e.settled.Swap(true) {
		e.log.Error().Str("envelope", e.ID).Msg("envelope settled twice")
		return false
	}
	return true
}

// released tells the connection the envelope is settled.
func (e *Envelope) released() {
	if e.release != nil {
		e.release()
	}
}

// Journal keeps the block_actions envelopes a Socket acked before their
// change was stored, until it is (internal/journal's Journal): Append
// returns once the frame would survive the death of the process, Done
// marks it processed.
type Journal interface {
	Append(frame []byte) (seq uint64, err error)
	Done(seq uint64) error
}

// Socket keeps one Socket Mode connection open and hands what it reads
// to Handler. Set the exported fields, then call Run once.
type Socket struct {
	// Journal, when set, takes every block_actions envelope before the
	// reader acks it, at once; the handler's Ack then marks it done.
	// Without it such an envelope is acked by the handler once stored.
	Journal Journal
	// Open asks Slack for a connection URL (apps.connections.open); each
	// URL is single-use.
	Open    func(ctx context.Context) (url string, err error)
	Handler EnvelopeHandler
	Log     zerolog.Logger
	// Slots, when set, bound the decoding of envelopes (not while the
	// dispatcher is behind).
	Slots workslots.Slots
	// afterJournaledAck, when set (by tests), runs in the reader right
	// after each journaled envelope's ack.
	afterJournaledAck func()
	// line routes the journaled envelopes of every Socket of a Bot, in
	// the order their readers put them on it; nil: Run makes one of its
	// own.
	line *orderLine
	// Backoff paces reconnects after failures (zero: 1 s doubling to 30 s,
	// jittered); Slack's Retry-After wins when it sends one.
	Backoff backoff.Backoff
	// MinLife is how long after hello a connection must last for its end
	// to count as Slack's periodic refresh (zero: DefaultMinLife); one that
	// ends sooner, by a disconnect or a cut, counts as a failed connect.
	MinLife time.Duration

	// gate, when set, is closed while the store cannot be reached: the
	// Socket then gives up its connection and opens none until it opens.
	gate *gate

	// routes carry acks its connections can no longer carry (relay.go):
	// the Bot's, shared by its Sockets; Run makes one of its own if unset.
	routes *ackRoutes

	live      atomic.Int32 // connections Slack said hello on that are still read
	envelopes atomic.Int64
}

// Connected reports whether Slack said hello on a connection still open.
func (s *Socket) Connected() bool { return s.live.Load() > 0 }

// Envelopes returns how many envelopes were read since start.
func (s *Socket) Envelopes() int64 { return s.envelopes.Load() }

// socketConn is one Socket Mode websocket. One goroutine reads; acks are
// written by the reader and by the handler's goroutines, one at a time
// under wmu.
type socketConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	once sync.Once

	// Written by the connection's reader (and read by Run once it ended).
	helloed bool
	helloAt time.Time
	// prev is the connection this one succeeds after Slack asked for a
	// refresh: let go at this one's hello. refresh is closed (once) when
	// Slack asks this one to refresh.
	prev        *socketConn
	refresh     chan struct{}
	refreshOnce sync.Once

	readerDone chan struct{} // closed when the connection's reader returned
	routes     *ackRoutes    // where an ack goes that this connection cannot carry

	mu        sync.Mutex
	unsettled int           // envelopes handed over and not yet acked or dropped
	closeSent bool          // the websocket close frame was written
	idle      chan struct{} // closed when unsettled drops to 0 while closing
}

// track counts an envelope handed over unacked; the func it returns
// counts it settled.
func (c *socketConn) track() (release func()) {
	c.mu.Lock()
	c.unsettled++
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.unsettled--
		last := c.unsettled == 0 && c.idle != nil
		if last {
			close(c.idle)
			c.idle = nil
		}
		c.mu.Unlock()
		if last {
			// The close frame follows the last ack at once, before the
			// peer, woken by that ack, can pick this connection again.
			c.sendClose()
		}
	}
}

// sendClose writes the websocket close frame, once.
func (c *socketConn) sendClose() error {
	c.mu.Lock()
	sent := c.closeSent
	c.closeSent = true
	c.mu.Unlock()
	if sent {
		return nil
	}
	c.routes.remove(c) // no rerouted ack is sent after the close frame
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(writeTimeout))
}

// closeWhenSettled closes the connection once every envelope read from it
// is settled (their acks go out on it), or after at most maxWait, or when
// ctx ends.
func (c *socketConn) closeWhenSettled(ctx context.Context, maxWait time.Duration) {
	defer c.close()
	defer c.closeHandshake()
	c.waitSettled(ctx, maxWait)
}

// waitSettled returns once every envelope read from c is settled, or
// after at most maxWait, or when ctx ends.
func (c *socketConn) waitSettled(ctx context.Context, maxWait time.Duration) {
	c.mu.Lock()
	if c.unsettled == 0 {
		c.mu.Unlock()
		return
	}
	idle := c.idle // another closer may wait already (a refresh's successor, and the reader's end)
	if idle == nil {
		idle = make(chan struct{})
		c.idle = idle
	}
	c.mu.Unlock()
	t := time.NewTimer(maxWait)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}

// closeHandshakeWait bounds the wait for the peer's close frame.
const closeHandshakeWait = time.Second

// closeHandshake ends a connection that is still read the websocket way:
// a close frame, then reading on until the peer's close frame ends the
// reader. Closing the TCP connection with frames still unread would send
// a reset, which can make the peer discard acks it received but had not
// read yet.
func (c *socketConn) closeHandshake() {
	if c.readerDone == nil {
		return
	}
	select {
	case <-c.readerDone:
		return
	default:
	}
	if err := c.sendClose(); err != nil {
		return
	}
	t := time.NewTimer(closeHandshakeWait)
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-t.C:
	}
}

// ack answers an envelope, with payload as the ack's payload (nil: none).
// It returns an error when the payload does not encode, is over Slack's
// size limit, or the write fails and no other route took the ack (a
// connection that sent its close frame, or failed, cannot carry it: see
// relay.go).
func (c *socketConn) ack(id string, payload any) error {
	buf, err := ackFrame(id, payload)
	if err != nil {
		return fmt.Errorf("ack %s: %w", id, err)
	}
	if len(buf) >= maxAckBytes {
		return fmt.Errorf("ack %s: %d bytes, Slack's limit is %d", id, len(buf), maxAckBytes)
	}
	if err := c.write(id, buf); err != nil {
		return c.routes.reroute(c, id, buf, err)
	}
	return nil
}

// ackFrame encodes the ack of envelope id with payload (nil: none) as
// json.Marshal encodes a socketmode.Response. An ack the reader writes
// before it reads the next frame has no payload and, from Slack, an id of
// plain characters: its bytes are appended directly, with no reflection
// on the ack's path. Any other id (one json.Marshal would escape) or a
// payload goes through json.Marshal.
func ackFrame(id string, payload any) ([]byte, error) {
	if payload != nil || !plainJSON(id) {
		return json.Marshal(socketmode.Response{EnvelopeID: id, Payload: payload})
	}
	const head, tail = `{"envelope_id":"`, `"}`
	b := make([]byte, 0, len(head)+len(id)+len(tail))
	b = append(b, head...)
	b = append(b, id...)
	return append(b, tail...), nil
}

// plainJSON reports whether json.Marshal writes s between its quotes
// byte for byte: printable ASCII without a quote, a backslash, or the
// <, > and & it escapes for HTML.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// write writes frame, the ack of envelope id, on c.
func (c *socketConn) write(id string, frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
		return fmt.Errorf("ack %s: %w", id, err)
	}
	return nil
}

func (c *socketConn) close() { c.once.Do(func() { _ = c.ws.Close() }) }

// framePool holds the buffers frames are read into, so that a frame costs
// no allocation of its size (ReadMessage reads each whole with io.ReadAll,
// doubling a fresh buffer).
var framePool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledFrame: a buffer grown past this by a rare huge frame is left
// to the garbage collector rather than kept.
const maxPooledFrame = 256 << 10

// readFrame reads the next data frame into a pooled buffer, which the
// caller hands back with releaseFrame once nothing refers to its bytes.
// It returns the connection's read error (a frame over the read limit is
// one).
func readFrame(ws *websocket.Conn) (*bytes.Buffer, error) {
	_, r, err := ws.NextReader()
	if err != nil {
		return nil, err
	}
	buf := framePool.Get().(*bytes.Buffer)
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		releaseFrame(buf)
		return nil, err
	}
	return buf, nil
}

// releaseFrame returns a frame's buffer to the pool; buf must not be used
// after.
func releaseFrame(buf *bytes.Buffer) {
	if buf != nil && buf.Cap() <= maxPooledFrame {
		framePool.Put(buf)
	}
}

// inbound is an envelope read from a connection, on its way to the
// dispatcher; closeConn instead asks the dispatcher to close conn once
// everything read from it before has been handed over and settled.
type inbound struct {
	conn      *socketConn
	id        string
	frame     *bytes.Buffer // from readFrame; the dispatcher releases it
	acked     bool
	seq       uint64 // the envelope's journal entry (0: not journaled)
	release   func() // counts the envelope settled on its connection; nil when acked
	closeConn bool
}

// Run keeps one Socket Mode connection open until ctx ends, reconnecting
// when Slack asks to or the connection drops, and returns once everything
// read was handed over. It returns ctx's error, or an error when Slack
// refuses the app token.
//
// When Slack asks a connection that lived past MinLife to refresh
// (disconnect refresh_requested or warning), the successor is opened
// while the old one keeps reading; the old one is let go (closed once the
// envelopes read from it are settled) only after the successor's hello,
// so a refresh never leaves this Socket without a connection.
func (s *Socket) Run(ctx context.Context) error {
	if s.routes == nil {
		s.routes = newAckRoutes(nil, s.Log)
	}
	in := make(chan inbound, inboundBuffer)
	// wctx outlives ctx by settleWait: envelopes read before a shutdown
	// are still handled, stored and acked on their connection (Slack
	// never resends them), while the connections close as soon as
	// nothing read from them is unsettled.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	stopLinger := context.AfterFunc(ctx, func() { time.AfterFunc(settleWait, wcancel) })
	defer stopLinger()
	var dispatcher, closers, readers, lined sync.WaitGroup
	dispatcher.Go(func() {
		for f := range in {
			if f.closeConn {
				closers.Go(func() { f.conn.closeWhenSettled(wctx, settleWait) })
				continue
			}
			s.dispatch(wctx, f, len(in) >= backlogged)
		}
	})
	line := s.line
	if line == nil { // a Socket on its own: a line of its own
		line = newOrderLine()
		var routing sync.WaitGroup
		routing.Go(line.run)
		defer routing.Wait()
		defer line.close() // after the wait below, deferred later
	}
	defer func() {
		readers.Wait()
		lined.Wait() // routed, on wctx
		close(in)
		dispatcher.Wait()
		closers.Wait()
	}()
	var (
		retiring *socketConn // asked to refresh; let go after its successor's hello
		young    error       // why the last connection ended young: the next connect waits first
	)
	g := s.gate
	if g == nil {
		g = &gate{} // open for good
	}
	for {
		conn, err := s.connect(ctx, g, young)
		if err != nil {
			return err
		}
		young = nil
		conn.prev, retiring = retiring, nil
		conn.refresh = make(chan struct{})
		ended := make(chan error, 1)
		// The connection ends as at a shutdown (once what was read from
		// it is settled) when ctx ends or the gate closes.
		cctx, ccancel := context.WithCancel(ctx)
		stopHold := g.onClose(ccancel)
		readers.Go(func() {
			defer ccancel()
			defer stopHold()
			err := s.read(cctx, wctx, conn, in, line, &lined, &closers)
			in <- inbound{conn: conn, closeConn: true}
			ended <- err
		})
		select {
		case <-conn.refresh:
			retiring = conn
			s.Backoff.Reset()
			s.Log.Info().Msg("slack asked to refresh a socket mode connection; opening its successor first")
			continue
		case err = <-ended:
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if reason, _ := g.state(); reason != nil {
			s.Log.Warn().Err(reason).Msg("socket mode connection given up: its clicks could not be stored")
			continue
		}
		minLife := cmp.Or(s.MinLife, DefaultMinLife)
		if conn.helloed && time.Since(conn.helloAt) >= minLife {
			s.Backoff.Reset()
			s.Log.Info().Err(err).Msg("socket mode connection ended; reconnecting")
			continue
		}
		// Dropped before hello, or soon after it: back off as for a failed
		// connect, or a link that always drops would spin.
		young = fmt.Errorf("socket mode connection ended young (helloed: %t): %w", conn.helloed, cmp.Or(err, errors.New("closed")))
	}
}

// connect opens a connection, retrying failures with s.Backoff (or
// Slack's Retry-After) until ctx ends or Slack refuses the app token;
// each attempt waits for g to be open first. young, when set, is why the
// last connection ended young: it counts as a failed attempt, so the
// first connect waits as after one.
func (s *Socket) connect(ctx context.Context, g *gate, young error) (*socketConn, error) {
	var conn *socketConn
	err := backoff.Retry{Pause: &s.Backoff, OnRetry: func(attempt int, err error, wait time.Duration) {
		msg := "socket mode connect failed; retrying"
		if attempt == 1 && young != nil {
			msg = "socket mode connection ended young; retrying"
		}
		s.Log.Warn().Err(err).Dur("retry_in", wait).Msg(msg)
	}}.Do(ctx, func(attempt int) error {
		if attempt == 1 && young != nil {
			return retryConnect(young)
		}
		if reason, _ := g.state(); reason != nil {
			s.Log.Warn().Err(reason).Msg("no socket mode connection until the store can be reached again")
			if !g.waitOpen(ctx) {
				return backoff.Stop(ctx.Err())
			}
			s.Log.Info().Msg("store reachable again; opening a socket mode connection")
		}
		var err error
		conn, err = s.openSocket(ctx)
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return backoff.Stop(ctx.Err())
		case fatalConnectError(err):
			s.Log.Error().Err(err).Msg("slack refused the app token (invalid auth)")
			return backoff.Stop(fmt.Errorf("bot run: socket mode: %w", slackErr(err)))
		}
		return retryConnect(err)
	})
	switch {
	case errors.Is(err, backoff.ErrInterrupted):
		return nil, ctx.Err()
	case err != nil:
		return nil, err
	}
	return conn, nil
}

var socketDialer = websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 10 * time.Second}

// openSocket asks Slack for a connection URL (each is single-use) and
// dials it. Errors name the step; Slack's own refusals wrap
// slack.SlackErrorResponse.
func (s *Socket) openSocket(ctx context.Context) (*socketConn, error) {
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	url, err := s.Open(octx)
	if err != nil {
		return nil, fmt.Errorf("apps.connections.open: %w", err)
	}
	ws, resp, err := socketDialer.DialContext(octx, url, nil)
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("socket mode dial: %w", err)
	}
	ws.SetReadLimit(maxFrameBytes)
	return &socketConn{ws: ws, readerDone: make(chan struct{}), routes: s.routes}, nil
}

// fatalConnectError reports whether Slack refused the app token, as
// slack-go's socketmode.Client decides it: retrying cannot help.
func fatalConnectError(err error) bool {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "invalid_auth", "account_inactive", "not_authed", "token_revoked":
			return true
		}
	}
	var code slack.StatusCodeError
	return errors.As(err, &code) && code.Code == http.StatusNotFound
}

// retryConnect marks a failed connect for backoff.Retry: after Slack's
// Retry-After when it sent one, else after the backoff's next pause.
func retryConnect(err error) error {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) && rl.RetryAfter > 0 {
		return backoff.After(rl.RetryAfter, err)
	}
	return err
}

// read reads frames until the connection fails, Slack asks for a
// reconnect or ctx ends, and returns why. It acks each envelope that
// cannot ask for a change as soon as it has its id, and so each
// block_actions envelope once it is in the Journal (when there is one),
// then hands the envelope to the dispatcher.
func (s *Socket) read(ctx, wctx context.Context, c *socketConn, in chan<- inbound, line *orderLine, lined, closers *sync.WaitGroup) error {
	// At shutdown (ctx) the connection is closed once the envelopes read
	// from it are settled; until then it is still read, and what it
	// brings is handled (on wctx) and acked.
	closing := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(closing)
		if s.gate != nil {
			if reason, _ := s.gate.state(); reason != nil {
				// The store cannot be reached: an envelope read and not
				// settled cannot be stored, so it is not waited for (nor
				// a turn, for its ack to go out on a sibling): the
				// connection goes at once, and Slack sends the next
				// clicks to a replica that can store them.
				c.closeWhenSettled(wctx, 0)
				return
			}
		}
		// One connection of the process at a time (relay.go).
		s.routes.closeInTurn(wctx, c, func() { c.closeWhenSettled(wctx, settleWait) })
	})
	defer func() {
		if !stop() {
			<-closing
		}
	}()
	defer close(c.readerDone) // before waiting for closing: its handshake waits for it
	defer s.routes.remove(c)
	defer func() {
		if c.helloed {
			s.live.Add(-1)
		}
	}()
	ws := c.ws
	alive := func() { _ = ws.SetReadDeadline(time.Now().Add(pingTimeout)) }
	alive()
	ws.SetPingHandler(func(data string) error {
		alive()
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeTimeout))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		return err
	})
	for {
		buf, err := readFrame(ws)
		if err != nil {
			return fmt.Errorf("socket mode read: %w", err)
		}
		alive()
		frame := buf.Bytes()
		id := envelopeID(frame)
		if id == "" {
			err := s.onControlFrame(wctx, c, frame, closers)
			releaseFrame(buf)
			if err != nil {
				return err
			}
			continue
		}
		s.envelopes.Add(1)
		s.Log.Debug().Str("envelope", id).Bool("stopping", ctx.Err() != nil).Msg("envelope read")
		f := inbound{conn: c, id: id, frame: buf}
		if s.Journal != nil && journaled(frame) {
			// Durable once appended: acked at once, replayed after a crash.
			if f.seq, err = s.Journal.Append(frame); err != nil {
				s.Log.Error().Err(err).Str("envelope", id).Msg("journal append failed; acking once stored")
			}
		}
		if f.seq != 0 {
			// Put on the line before its ack: the person's next click,
			// which comes after this ack on whichever connection, is put
			// on it after this one, and the line routes in that order, so
			// one ask's acts apply in the order they were acked. Handed
			// over after the ack, a later click on another connection
			// could overtake it and be undone by it. The decode is the
			// line's, off the ack's path.
			f.acked = true
			lined.Add(1)
			if !line.put(wctx, linedEnvelope{s: s, ctx: wctx, f: f, done: lined.Done}) {
				lined.Done()
				// Durable all the same: acked, and replayed at the next start.
				releaseFrame(buf)
				_ = c.ack(id, nil)
				return wctx.Err()
			}
			if err := c.ack(id, nil); err != nil {
				s.Log.Warn().Err(err).Msg("ack failed")
			}
			line.wake() // after the ack: waking the line's goroutine costs a syscall
			if s.afterJournaledAck != nil {
				s.afterJournaledAck()
			}
			continue
		}
		if !ackAfterDecode(frame) {
			if err := c.ack(id, nil); err != nil {
				s.Log.Warn().Err(err).Msg("ack failed")
			}
			f.acked = true
		} else {
			// Counted unsettled from the moment it is read, so that a
			// shutdown's closer never closes the connection under it.
			f.release = c.track()
		}
		select {
		case in <- f:
		case <-wctx.Done():
			releaseFrame(buf)
			if f.release != nil {
				f.release()
			}
			return wctx.Err()
		}
	}
}

// onControlFrame handles a frame without an envelope: hello marks the
// connection up, lets go of the connection it succeeds and tells the
// handler the app id; disconnect returns errDisconnectRequested, except
// that Slack's refresh of a connection that lived past MinLife only
// signals c.refresh (its successor is opened while c keeps reading).
func (s *Socket) onControlFrame(ctx context.Context, c *socketConn, frame []byte, closers *sync.WaitGroup) error {
	var req socketmode.Request
	if err := json.Unmarshal(frame, &req); err != nil {
		s.Log.Warn().Err(err).Msg("socket mode frame that did not parse")
		return nil
	}
	switch req.Type {
	case socketmode.RequestTypeHello:
		s.Handler.Hello(req.ConnectionInfo.AppID)
		if !c.helloed {
			c.helloAt, c.helloed = time.Now(), true
			s.live.Add(1)
			s.routes.add(c)
		}
		if prev := c.prev; prev != nil {
			c.prev = nil
			closers.Go(func() { prev.closeWhenSettled(ctx, settleWait) })
		}
		s.Log.Debug().Int("connections", req.NumConnections).Msg("socket mode connected")
	case socketmode.RequestTypeDisconnect:
		refresh := req.Reason == "refresh_requested" || req.Reason == "warning"
		if refresh && c.helloed && time.Since(c.helloAt) >= cmp.Or(s.MinLife, DefaultMinLife) && c.refresh != nil {
			c.refreshOnce.Do(func() { close(c.refresh) })
			return nil
		}
		return fmt.Errorf("%w (%s)", errDisconnectRequested, req.Reason)
	}
	return nil
}

// dispatch decodes an envelope and hands an interactive one to the
// handler; others are acked (unless the reader did). It decodes in a slot
// unless the dispatcher is behind.
func (s *Socket) dispatch(ctx context.Context, f inbound, behind bool) {
	env := &Envelope{ID: f.id, log: s.Log}
	if f.seq != 0 {
		env.journal, env.seq = s.Journal, f.seq
	}
	if !f.acked {
		conn, id := f.conn, f.id
		env.ackFn = func(payload any) error { return conn.ack(id, payload) }
		env.release = f.release
	}
	slotted := !behind && s.Slots != nil
	if slotted && !s.Slots.Acquire(ctx) {
		releaseFrame(f.frame)
		env.Drop() // stopping: not handled, so not acked
		return
	}
	typ, cb, err := decodeEnvelope(f.frame.Bytes())
	var ev EventCallback
	evOK := false
	if typ == socketmode.RequestTypeEventsAPI {
		ev, evOK = decodeEvent(f.frame.Bytes())
	}
	releaseFrame(f.frame) // the callback holds copies, not the frame's bytes
	if slotted {
		s.Slots.Release()
	}
	if typ != socketmode.RequestTypeInteractive {
		env.Ack(nil)
		if h, ok := s.Handler.(EventHandler); ok && evOK {
			h.Event(ctx, ev)
		}
		return
	}
	if err != nil {
		env.Ack(nil)
		s.Log.Warn().Err(err).Str("envelope", f.id).Msg("interactive payload that did not parse")
		return
	}
	env.Payload = cb
	s.Handler.Interactive(ctx, env)
}

// Interactive implements EnvelopeHandler: it routes the payload and
// starts the work (see route), which settles env.
func (b *Bot) Interactive(ctx context.Context, env *Envelope) {
	for _, j := range b.route(ctx, env) {
		if j.queue == "" {
			b.handlers.Go(j.fn)
		} else {
			b.queue.submit(j.queue, j.fn)
		}
	}
}
