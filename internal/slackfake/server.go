package slackfake

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// ErrClosed is returned by blocking calls when the Server has been closed.
var ErrClosed = errors.New("slackfake: server closed")

// Server is a fake Slack: Web API, Socket Mode and a workspace in memory.
// All methods are safe for concurrent use.
type Server struct {
	cfg  Config
	hs   *httptest.Server
	base string // http://127.0.0.1:PORT

	mu      sync.Mutex
	closed  bool
	done    chan struct{}
	changed chan struct{}
	wg      sync.WaitGroup

	ws    workspace
	calls []Call
	fails map[string][]*injected
	// delays holds, per method, the answer delays queued by DelayNext.
	delays map[string][]time.Duration
	rates  map[string]*bucket

	msgs       map[string][]*msgRec // channel → messages in post order
	msgIndex   map[msgKeyT]*msgRec  // (channel, ts) → message, for findMsgLocked
	lastTS     int64                // last message ts in microseconds
	ephemerals []Ephemeral
	views      map[string]*viewRec
	homes      map[string]*viewRec // user → published Home tab
	viewSeq    int
	triggers   map[string]*trigger
	responses  map[string]responseTarget
	states     map[string]map[string]*clientState // user → surface key → state
	persons    map[string]*Person

	sock socketState
	subs map[*subscriber]struct{}
	// web: where payloads go in HTTP mode (UseHTTP); zero: Socket Mode.
	web webTarget
	// tm: teams, enterprises, issued tokens and OAuth codes (teams.go,
	// oauth.go)
	tm teamsState
}

// New starts a fake Slack on 127.0.0.1 with a random port. It returns an
// error only when no listener can be opened.
func New(cfg Config) (srv *Server, err error) {
	s := &Server{
		cfg:       cfg.withDefaults(),
		done:      make(chan struct{}),
		changed:   make(chan struct{}),
		fails:     map[string][]*injected{},
		delays:    map[string][]time.Duration{},
		rates:     map[string]*bucket{},
		msgs:      map[string][]*msgRec{},
		msgIndex:  map[msgKeyT]*msgRec{},
		views:     map[string]*viewRec{},
		homes:     map[string]*viewRec{},
		triggers:  map[string]*trigger{},
		responses: map[string]responseTarget{},
		states:    map[string]map[string]*clientState{},
		persons:   map[string]*Person{},
		subs:      map[*subscriber]struct{}{},
	}
	s.ws.init(s.cfg)
	s.initTeams()
	s.sock.init()
	defer func() {
		if r := recover(); r != nil { // httptest panics when it cannot listen
			srv, err = nil, errors.New("slackfake: cannot listen on 127.0.0.1")
		}
	}()
	s.hs = httptest.NewServer(http.HandlerFunc(s.route))
	s.base = s.hs.URL
	return s, nil
}

// APIURL returns the Web API base URL, "http://127.0.0.1:PORT/api/", for
// slack.OptionAPIURL (the trailing slash matters).
func (s *Server) APIURL() string { return s.base + "/api/" }

// URL returns the server's base URL, "http://127.0.0.1:PORT".
func (s *Server) URL() string { return s.base }

// Close closes every WebSocket, stops the HTTP server and waits for all of
// the server's goroutines; blocked calls return ErrClosed. Calling it again
// does nothing.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	close(s.done)
	s.stopPendingLocked()
	conns := s.sock.snapshot()
	subs := s.subscribers()
	s.notifyLocked()
	s.mu.Unlock()

	for _, c := range conns {
		s.dropConn(c, websocketGoingAway, "server closed")
	}
	for _, sub := range subs {
		sub.cancel()
	}
	s.hs.CloseClientConnections()
	s.hs.Close()
	s.wg.Wait()
}

func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasPrefix(r.URL.Path, "/api/"):
		s.serveAPI(w, r, strings.TrimPrefix(r.URL.Path, "/api/"))
	case r.URL.Path == "/oauth/v2/authorize":
		s.serveAuthorize(w, r)
	case r.URL.Path == "/link/" || r.URL.Path == "/link":
		s.serveLink(w, r)
	case strings.HasPrefix(r.URL.Path, "/response/"):
		s.serveResponseURL(w, r, strings.TrimPrefix(r.URL.Path, "/response/"))
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) logf(format string, args ...any) { s.cfg.Logf("slackfake: "+format, args...) }

func (s *Server) now() time.Time { return s.cfg.Now() }

// notifyLocked wakes everything waiting for a state change. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// changeChan returns the channel closed at the next state change.
func (s *Server) changeChan() (ch <-chan struct{}, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed, s.closed
}
