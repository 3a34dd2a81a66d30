package mcp

import (
	"context"
	"crypto/rand"
	"net/http"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// postHeader carries, from httpHandler to the tool handler, the token of the
// HTTP POST a call came in (the SDK passes a call's request headers along).
// A value sent by a client is overwritten.
const postHeader = "X-Slackask-Mcp-Post"

// sessionHeader is the streamable transport's session id header.
const sessionHeader = "Mcp-Session-Id"

// httpHandler wraps the SDK's streamable handler so that a call waiting for
// an answer ends when nobody can receive its result any more. The SDK does
// not do that by itself for stateful sessions: a dropped POST leaves the call
// running (the stream could be resumed with an event store, which we do not
// keep), and deleting a session waits for the calls in flight to return,
// which for an unanswered ask is never.
type httpHandler struct {
	calls *httpCalls
	inner http.Handler
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		token := rand.Text()
		r = r.Clone(r.Context())
		r.Header.Set(postHeader, token)
		h.calls.addPost(token, r.Context())
		defer h.calls.removePost(token)
	case http.MethodDelete:
		if id := r.Header.Get(sessionHeader); id != "" {
			h.calls.cancelSession(id)
		}
	}
	h.inner.ServeHTTP(w, r)
}

// httpCalls tracks the POSTs being served and the tool calls in flight.
type httpCalls struct {
	mu       sync.Mutex
	posts    map[string]context.Context              // POST token → its request context
	sessions map[string]map[*context.CancelFunc]bool // session id → its calls' cancels
}

func newHTTPCalls() *httpCalls {
	return &httpCalls{posts: map[string]context.Context{}, sessions: map[string]map[*context.CancelFunc]bool{}}
}

func (c *httpCalls) addPost(token string, ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.posts[token] = ctx
}

func (c *httpCalls) removePost(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.posts, token)
}

func (c *httpCalls) cancelSession(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for cancel := range c.sessions[id] {
		(*cancel)()
	}
}

// track arranges for cancel to be called when the POST that carried req
// ends, or its session is deleted. The returned func undoes that.
func (c *httpCalls) track(req *mcpsdk.CallToolRequest, cancel context.CancelFunc) (untrack func()) {
	stop := func() bool { return false }
	if req.Extra != nil && req.Extra.Header != nil {
		if token := req.Extra.Header.Get(postHeader); token != "" {
			c.mu.Lock()
			post, ok := c.posts[token]
			c.mu.Unlock()
			if ok {
				stop = context.AfterFunc(post, cancel)
			} else {
				cancel() // the POST has already ended: nobody is listening
			}
		}
	}
	var id string
	if req.Session != nil {
		id = req.Session.ID()
	}
	key := &cancel
	c.mu.Lock()
	if c.sessions[id] == nil {
		c.sessions[id] = map[*context.CancelFunc]bool{}
	}
	c.sessions[id][key] = true
	c.mu.Unlock()
	return func() {
		stop()
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.sessions[id], key)
		if len(c.sessions[id]) == 0 {
			delete(c.sessions, id)
		}
	}
}
