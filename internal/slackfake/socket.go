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
}

type socketState struct {
	tickets map[string]bool
	conns   []*wsConn
	nextID  int
	rr      int
	pending map[string]*pendingAck
	acks    []time.Duration
	sent    time.Time // when the latest envelope was written
	pongs   int
}

func (st *socketState) init() {
	st.tickets = map[string]bool{}
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

// appsConnectionsOpen hands out a single-use WebSocket URL. s.mu held.
func (s *Server) appsConnectionsOpen(*apiRequest) reply {
	ticket := randHex(16)
	s.sock.tickets[ticket] = true
	wsURL := "ws" + strings.TrimPrefix(s.base, "http") + "/link/?ticket=" + ticket + "&app_id=" + url.QueryEscape(s.cfg.AppID)
	return okReply(map[string]any{"url": wsURL})
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	ticket := r.URL.Query().Get("ticket")
	s.mu.Lock()
	valid := s.sock.tickets[ticket] && !s.closed
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
	s.attach(ws)
}

// attach registers a new socket, sends hello and starts its goroutines.
func (s *Server) attach(ws *websocket.Conn) {
	c := &wsConn{ws: ws, stop: make(chan struct{})}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	s.mu.Lock()
	if s.closed || len(s.sock.conns) >= maxConnections {
		reason := "too_many_websockets"
		s.mu.Unlock()
		_ = c.writeLocked(map[string]any{"type": "disconnect", "reason": reason})
		_ = ws.Close()
		return
	}
	s.sock.nextID++
	c.id = s.sock.nextID
	s.sock.conns = append(s.sock.conns, c)
	n := len(s.sock.conns)
	s.wg.Add(2)
	s.emitLocked(Event{Type: EventConnected})
	s.mu.Unlock()

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

// dropConn closes a socket once, sending a close frame with code.
func (s *Server) dropConn(c *wsConn, code int, text string) {
	c.once.Do(func() {
		close(c.stop)
		msg := websocket.FormatCloseMessage(code, text)
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
		_ = c.ws.Close()
		s.mu.Lock()
		if s.sock.remove(c) {
			s.emitLocked(Event{Type: EventDisconnected})
		}
		s.mu.Unlock()
	})
}

// Disconnect sends {"type":"disconnect","reason":reason} on every socket and
// closes them; slack-go then reconnects through apps.connections.open.
func (s *Server) Disconnect(reason string) {
	s.mu.Lock()
	conns := s.sock.snapshot()
	s.mu.Unlock()
	for _, c := range conns {
		frame := map[string]any{"type": "disconnect", "reason": reason, "debug_info": map[string]any{"host": "fake"}}
		if err := c.write(frame); err != nil {
			s.logf("socket %d: writing disconnect: %v", c.id, err)
		}
		s.dropConn(c, websocket.CloseNormalClosure, reason)
	}
}

// Connections returns the number of open Socket Mode connections.
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
