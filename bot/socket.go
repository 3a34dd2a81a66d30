package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/internal/clock"
)

// The Socket Mode connection is the bot's own, on slack-go's Web API
// (apps.connections.open) and wire types (socketmode.Request, Response) and
// the gorilla/websocket slack-go dials with. slack-go's socketmode.Client
// decodes every payload in full, message blocks included, before the app
// sees the envelope: that decode was 36–57 % of the bot's CPU and all of
// its ack latency beyond the round trip (bench/, BENCHMARKS.md). Here the
// reader acks an envelope as soon as it has read its id, and only a
// view_submission, whose ack may carry validation errors, waits for its
// payload to be decoded and judged.
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
	// inboundBuffer is how many read envelopes may wait for the dispatcher
	// before the reader stops reading.
	inboundBuffer = 1024
	// backlogged is how many envelopes waiting for the dispatcher make it
	// decode without a work slot: the reader must not stall on a full
	// buffer (it would stop acking), so when the post-ack work falls
	// behind it gets every core.
	backlogged = 64
)

// errDisconnectRequested: Slack asked us to reconnect (refresh, warning).
var errDisconnectRequested = errors.New("bot: slack asked to reconnect")

// socketConn is one Socket Mode websocket. One goroutine reads; acks are
// written by the reader and by the dispatcher, one at a time under wmu.
type socketConn struct {
	ws   *websocket.Conn
	wmu  sync.Mutex
	once sync.Once
}

// ack answers an envelope, with payload as the ack's payload (nil: none).
// It returns an error when the payload does not encode, is over Slack's
// size limit, or the write fails.
func (c *socketConn) ack(id string, payload any) error {
	buf, err := json.Marshal(socketmode.Response{EnvelopeID: id, Payload: payload})
	if err != nil {
		return fmt.Errorf("ack %s: %w", id, err)
	}
	if len(buf) >= maxAckBytes {
		return fmt.Errorf("ack %s: %d bytes, Slack's limit is %d", id, len(buf), maxAckBytes)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := c.ws.WriteMessage(websocket.TextMessage, buf); err != nil {
		return fmt.Errorf("ack %s: %w", id, err)
	}
	return nil
}

func (c *socketConn) close() { c.once.Do(func() { _ = c.ws.Close() }) }

// framePool holds the buffers frames are read into: a frame read whole
// with ReadMessage cost ~16 KB of allocation (io.ReadAll doubling up to a
// 5 KB payload), a quarter of all the bot allocated per envelope.
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
// everything read from it before has been handled (and acked).
type inbound struct {
	conn      *socketConn
	id        string
	frame     *bytes.Buffer // from readFrame; the dispatcher releases it
	acked     bool
	closeConn bool
}

// runSocket keeps one Socket Mode connection open until ctx ends,
// reconnecting when Slack asks to or the connection drops. It returns
// ctx's error, or an error when Slack refuses the app token.
func (b *Bot) runSocket(ctx context.Context) error {
	in := make(chan inbound, inboundBuffer)
	var dispatcher sync.WaitGroup
	dispatcher.Go(func() {
		for f := range in {
			b.dispatch(ctx, f, len(in) >= backlogged)
		}
	})
	defer func() {
		close(in)
		dispatcher.Wait()
	}()
	failures := 0
	for {
		conn, err := b.openSocket(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if fatalConnectError(err) {
				b.log.Error().Err(err).Msg("slack refused the app token (invalid auth)")
				return fmt.Errorf("bot run: socket mode: %w", slackErr(err))
			}
			failures++
			wait := connectBackoff(failures, err)
			b.log.Warn().Err(err).Dur("retry_in", wait).Msg("socket mode connect failed; retrying")
			if !clock.Sleep(ctx, wait) {
				return ctx.Err()
			}
			continue
		}
		err = b.readSocket(ctx, conn, in)
		helloed := b.connected.Swap(false)
		in <- inbound{conn: conn, closeConn: true}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if helloed || errors.Is(err, errDisconnectRequested) {
			failures = 0
			b.log.Info().Err(err).Msg("socket mode connection ended; reconnecting")
			continue
		}
		// Dropped before Slack said hello: back off as for a failed
		// connect, or a link that always drops would spin.
		failures++
		wait := connectBackoff(failures, err)
		b.log.Warn().Err(err).Dur("retry_in", wait).Msg("socket mode connection dropped before hello; retrying")
		if !clock.Sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

var socketDialer = websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: 10 * time.Second}

// openSocket asks Slack for a connection URL (each is single-use) and
// dials it. Errors name the step; Slack's own refusals wrap
// slack.SlackErrorResponse.
func (b *Bot) openSocket(ctx context.Context) (*socketConn, error) {
	octx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, url, err := b.api.StartSocketModeContext(octx)
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
	return &socketConn{ws: ws}, nil
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

// connectBackoff is 1 s doubling to 30 s, or Slack's Retry-After.
func connectBackoff(failures int, err error) time.Duration {
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) && rl.RetryAfter > 0 {
		return rl.RetryAfter
	}
	return min(time.Second<<min(failures-1, 5), 30*time.Second)
}

// readSocket reads frames until the connection fails, Slack asks for a
// reconnect or ctx ends, and returns why. It acks each envelope that
// cannot be a view_submission as soon as it has its id, then hands the
// envelope to the dispatcher.
func (b *Bot) readSocket(ctx context.Context, c *socketConn, in chan<- inbound) error {
	stop := context.AfterFunc(ctx, c.close)
	defer stop()
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
			err := b.onControlFrame(frame)
			releaseFrame(buf)
			if err != nil {
				return err
			}
			continue
		}
		b.stats.Envelopes.Add(1)
		f := inbound{conn: c, id: id, frame: buf}
		if !mayNeedAckPayload(frame) {
			if err := c.ack(id, nil); err != nil {
				b.log.Warn().Err(err).Msg("ack failed")
			}
			f.acked = true
		}
		select {
		case in <- f:
		case <-ctx.Done():
			releaseFrame(buf)
			return ctx.Err()
		}
	}
}

// onControlFrame handles a frame without an envelope: hello marks the bot
// connected and tells it its app id; disconnect returns
// errDisconnectRequested.
func (b *Bot) onControlFrame(frame []byte) error {
	var req socketmode.Request
	if err := json.Unmarshal(frame, &req); err != nil {
		b.log.Warn().Err(err).Msg("socket mode frame that did not parse")
		return nil
	}
	switch req.Type {
	case socketmode.RequestTypeHello:
		if id := req.ConnectionInfo.AppID; id != "" {
			b.appID.Store(&id)
		}
		b.connected.Store(true)
		b.log.Debug().Int("connections", req.NumConnections).Msg("socket mode connected")
	case socketmode.RequestTypeDisconnect:
		return fmt.Errorf("%w (%s)", errDisconnectRequested, req.Reason)
	}
	return nil
}

// dispatch decodes an envelope, decides its ack (sent now unless the
// reader sent it) and starts the work it calls for: in the ask's queue,
// or at once for modals (their trigger is short). It decodes in a work
// slot unless the dispatcher is behind.
func (b *Bot) dispatch(ctx context.Context, f inbound, behind bool) {
	if f.closeConn {
		f.conn.close()
		return
	}
	if !behind {
		if !b.slots.acquire(ctx) {
			releaseFrame(f.frame)
			b.ackLate(f, nil)
			return
		}
	}
	typ, cb, err := decodeEnvelope(f.frame.Bytes())
	releaseFrame(f.frame) // the callback holds copies, not the frame's bytes
	if !behind {
		b.slots.release()
	}
	if typ != socketmode.RequestTypeInteractive {
		b.ackLate(f, nil)
		return
	}
	if err != nil {
		b.ackLate(f, nil)
		b.log.Warn().Err(err).Str("envelope", f.id).Msg("interactive payload that did not parse")
		return
	}
	ack, jobs := b.route(ctx, cb)
	b.ackLate(f, ack)
	for _, j := range jobs {
		if j.queue == "" {
			b.handlers.Go(j.fn)
		} else {
			b.queue.submit(j.queue, j.fn)
		}
	}
}

// ackLate sends the ack of an envelope the reader did not ack already.
func (b *Bot) ackLate(f inbound, payload any) {
	if f.acked {
		if payload != nil {
			b.log.Error().Str("envelope", f.id).Msg("envelope acked before its ack payload was known")
		}
		return
	}
	if err := f.conn.ack(f.id, payload); err != nil {
		b.log.Warn().Err(err).Msg("ack failed")
	}
}
