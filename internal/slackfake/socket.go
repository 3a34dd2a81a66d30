package slackfake

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	websocketGoingAway = websocket.CloseGoingAway
	writeTimeout       = 5 * time.Second
)

type wsConn struct {
	id   int
	ws   *websocket.Conn
	wmu  sync.Mutex // serialises data frames
	stop chan struct{}
	once sync.Once
	// guarded by Server.mu
	live      bool // in socketState.conns: envelopes may be sent to it
	delivered int
	acked     int
}

type socketState struct {
	tickets map[string]SocketFault // single-use URLs → the fault to apply
	conns   []*wsConn              // live connections in id order
	nextID  int
	lastID  int // id of the connection that got the latest envelope
	pending map[string]*pendingAck
	acks    []time.Duration
	sent    time.Time // when the latest envelope was written
	pongs   int
	opens   bucket // apps.connections.open rate limit
	refused int    // connections refused as an 11th
	faults  []*socketFaultQ
	failed  []FailedInteraction
	atClose []*atClose // DeliverAtClientClose's envelopes, in call order
}

func (st *socketState) init() {
	st.tickets = map[string]SocketFault{}
	st.pending = map[string]*pendingAck{}
}

func (st *socketState) snapshot() []*wsConn { return append([]*wsConn(nil), st.conns...) }

func (st *socketState) remove(c *wsConn) bool {
	for i, x := range st.conns {
		if x == c {
			st.conns = append(st.conns[:i], st.conns[i+1:]...)
			return true
		}
	}
	return false
}

// retireLocked takes c out of the live connections, so that no envelope is
// sent to it any more, and reports it once. s.mu held.
func (s *Server) retireLocked(c *wsConn) {
	c.live = false
	if s.sock.remove(c) {
		s.emitLocked(Event{Type: EventDisconnected})
	}
}

// appsConnectionsOpen hands out a single-use WebSocket URL, within the
// method's rate limit. s.mu held.
func (s *Server) appsConnectionsOpen(*apiRequest) reply {
	if rate := s.cfg.ConnectionsOpenPerMinute; rate > 0 {
		if ok, wait := s.sock.opens.take(s.now(), rate/60, float64(s.cfg.ConnectionsOpenBurst)); !ok {
			return rateLimited(wait)
		}
	}
	ticket := randHex(16)
	s.sock.tickets[ticket] = s.takeSocketFaultLocked()
	wsURL := "ws" + strings.TrimPrefix(s.base, "http") + "/link/?ticket=" + ticket + "&app_id=" + url.QueryEscape(s.cfg.AppID)
	return okReply(map[string]any{"url": wsURL})
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	f, valid := s.sock.tickets[ticket]
	valid = valid && !s.closed
	delete(s.sock.tickets, ticket)
	s.mu.Unlock()
	if !valid {
		s.logf("websocket refused: unknown or used ticket %q", ticket)
		http.Error(w, "invalid or already used ticket", http.StatusUnauthorized)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.logf("websocket upgrade failed: %v", err)
		return
	}
	switch f.Action {
	case SocketCutBeforeHello:
		_ = ws.Close()
	case SocketHoldHello:
		s.holdHello(ws, f)
	default:
		s.attach(ws, f)
	}
}

// holdHello sends nothing on ws for f.After (0: until the server closes),
// then attaches it as a new connection.
func (s *Server) holdHello(ws *websocket.Conn, f SocketFault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = ws.Close()
		return
	}
	s.wg.Go(func() {
		var fire <-chan time.Time
		if f.After > 0 {
			t := time.NewTimer(f.After)
			defer t.Stop()
			fire = t.C
		}
		select {
		case <-fire:
			s.attach(ws, SocketFault{})
		case <-s.done:
			_ = ws.Close()
		}
	})
}

// attach registers a new socket, sends hello, starts its goroutines and
// applies f (the zero SocketFault: none).
func (s *Server) attach(ws *websocket.Conn, f SocketFault) {
	c := &wsConn{ws: ws, stop: make(chan struct{})}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s.mu.Lock()
	if s.closed || len(s.sock.conns) >= maxConnections {
		if !s.closed {
			s.sock.refused++
			s.notifyLocked()
		}
		s.mu.Unlock()
		_ = c.writeLocked(map[string]any{"type": "disconnect", "reason": "too_many_websockets"})
		_ = ws.Close()
		return
	}
	s.sock.nextID++
	c.id = s.sock.nextID
	c.live = true
	s.sock.conns = append(s.sock.conns, c)
	n := len(s.sock.conns)
	later := f.Action != 0 && f.After > 0
	s.wg.Add(2)
	if later {
		s.wg.Add(1)
	}
	s.emitLocked(Event{Type: EventConnected})
	s.mu.Unlock()

	ws.SetCloseHandler(func(code int, _ string) error { return s.onClientClose(c, code) })
	ws.SetPongHandler(func(string) error {
		s.mu.Lock()
		s.sock.pongs++
		s.notifyLocked()
		s.mu.Unlock()
		return nil
	})
	go s.readLoop(c)
	go s.pingLoop(c)
	if err := c.writeLocked(s.hello(n)); err != nil {
		s.logf("socket %d: writing hello: %v", c.id, err)
	}
	switch {
	case later:
		go s.faultLater(c, f)
	case f.Action != 0:
		// c.wmu is still held since hello: no envelope can have reached c.
		s.applyFaultLocked(c, f)
	}
}

func (s *Server) faultLater(c *wsConn, f SocketFault) {
	defer s.wg.Done()
	t := time.NewTimer(f.After)
	defer t.Stop()
	select {
	case <-t.C:
		c.wmu.Lock()
		defer c.wmu.Unlock()
		s.applyFaultLocked(c, f)
	case <-c.stop:
	}
}

// applyFaultLocked ends c as f says. c.wmu held.
func (s *Server) applyFaultLocked(c *wsConn, f SocketFault) {
	s.mu.Lock()
	s.retireLocked(c)
	s.mu.Unlock()
	if f.Action == SocketDisconnect {
		if err := c.writeLocked(disconnectFrame(f.reason())); err != nil {
			s.logf("socket %d: writing disconnect: %v", c.id, err)
		}
		s.dropConn(c, websocket.CloseNormalClosure, f.reason())
		return
	}
	s.cutConn(c)
}

func disconnectFrame(reason string) map[string]any {
	return map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fake"}}
}

func (s *Server) hello(n int) map[string]any {
	return map[string]any{
		"type":            "hello",
		"num_connections": n,
		"connection_info": map[string]any{"app_id": s.cfg.AppID},
		"debug_info": map[string]any{
			"host": "fake", "build_number": 1, "approximate_connection_time": 18060,
		},
	}
}

func (c *wsConn) writeLocked(v any) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteJSON(v)
}

// writeFrameLocked writes a JSON text frame that is already encoded.
func (c *wsConn) writeFrameLocked(frame []byte) error {
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, frame)
}

func (c *wsConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(v)
}

func (s *Server) readLoop(c *wsConn) {
	defer s.wg.Done()
	defer s.dropConn(c, websocket.CloseNormalClosure, "")
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		s.handleFrame(c, data)
	}
}

func (s *Server) pingLoop(c *wsConn) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			if err := c.ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(writeTimeout)); err != nil {
				s.dropConn(c, websocket.CloseAbnormalClosure, "")
				return
			}
		}
	}
}

// dropConn closes a socket once, sending a close frame with code. The
// socket leaves the live connections before anything is written to it.
func (s *Server) dropConn(c *wsConn, code int, text string) {
	c.once.Do(func() {
		s.mu.Lock()
		s.retireLocked(c)
		s.mu.Unlock()
		close(c.stop)
		msg := websocket.FormatCloseMessage(code, text)
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		_ = c.ws.Close()
	})
}

// cutConn closes a socket's TCP connection without a close frame, as a
// network failure does.
func (s *Server) cutConn(c *wsConn) {
	c.once.Do(func() {
		s.mu.Lock()
		s.retireLocked(c)
		s.mu.Unlock()
		close(c.stop)
		_ = c.ws.Close()
	})
}

// Disconnect sends {"type":"disconnect","reason":reason} on every socket and
// closes them; slack-go then reconnects through apps.connections.open. No
// envelope is sent to a socket after its disconnect frame.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	conns := s.sock.snapshot()
	s.mu.Unlock()
	for _, c := range conns {
		s.disconnectConn(c, reason)
	}
}

func (s *Server) disconnectConn(c *wsConn, reason string) {
	c.wmu.Lock()
	s.mu.Lock()
	s.retireLocked(c)
	s.mu.Unlock()
	if err := c.writeLocked(disconnectFrame(reason)); err != nil {
		s.logf("socket %d: writing disconnect: %v", c.id, err)
	}
	c.wmu.Unlock()
	s.dropConn(c, websocket.CloseNormalClosure, reason)
}

// Cut closes the TCP connection of every socket without a close frame or a
// disconnect, as a network failure does.
func (s *Server) Cut() {
	s.mu.Lock()
	conns := s.sock.snapshot()
	s.mu.Unlock()
	for _, c := range conns {
		s.cutConn(c)
	}
}

// SocketInfo describes a live Socket Mode connection.
type SocketInfo struct {
	// ID numbers connections in the order they connected, from 1.
	ID int
	// Delivered counts the envelopes written to it; Acked the acks read
	// from it (late ones included).
	Delivered, Acked int
}

// Sockets returns the live connections in the order they connected.
func (s *Server) Sockets() []SocketInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SocketInfo, len(s.sock.conns))
	for i, c := range s.sock.conns {
		out[i] = SocketInfo{ID: c.id, Delivered: c.delivered, Acked: c.acked}
	}
	return out
}

func (s *Server) liveConn(id int) *wsConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sock.conns {
		if c.id == id {
			return c
		}
	}
	return nil
}

// DisconnectSocket sends {"type":"disconnect","reason":reason} on the live
// connection id and closes it, and reports whether there was one.
func (s *Server) DisconnectSocket(id int, reason string) bool {
	c := s.liveConn(id)
	if c != nil {
		s.disconnectConn(c, reason)
	}
	return c != nil
}

// CutSocket closes the TCP connection of the live connection id without a
// close frame, and reports whether there was one.
func (s *Server) CutSocket(id int) bool {
	c := s.liveConn(id)
	if c != nil {
		s.cutConn(c)
	}
	return c != nil
}

// RefusedSockets returns how many connections were refused because the app
// had 10 already (Slack's limit): each got {"type":"disconnect",
// "reason":"too_many_websockets"} instead of hello and was closed.
func (s *Server) RefusedSockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.refused
}

// Connections returns the number of live Socket Mode connections: those
// that got hello and may be sent envelopes.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sock.conns)
}

// Pongs returns how many pong frames the clients sent back to our pings.
func (s *Server) Pongs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock.pongs
}

// WaitConnected waits until at least n sockets are connected (an envelope
// sent to one of them always follows its hello). It returns ctx.Err() or ErrClosed when that does not happen.
func (s *Server) WaitConnected(ctx context.Context, n int) error {
	return s.WaitFor(ctx, func() bool { return s.Connections() >= n })
}
