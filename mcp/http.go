package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/interaction"
)

// maxInspectBytes bounds the POST bodies read to tag calls and record
// cancel reasons; a larger body is passed on untouched.
const maxInspectBytes = 4 << 20

// postHeader carries, from httpHandler to the tool handler, the token of the
// HTTP POST a call came in (the SDK passes a call's request headers along).
// A value sent by a client is overwritten.
const postHeader = "X-Slackask-Mcp-Post"

// sessionHeader is the streamable transport's session id header.
const sessionHeader = "Mcp-Session-Id"

// httpHandler wraps the SDK's streamable handler so that a call waiting for
// an answer ends when nobody can receive its result any more, and reads the
// reasons of notifications/cancelled before the SDK drops them. The SDK does
// not end calls by itself for stateful sessions: a dropped POST leaves the
// call running (the stream could be resumed with an event store, which we do
// not keep), and deleting a session waits for the calls in flight to return,
// which for an unanswered ask is never.
type httpHandler struct {
	calls   *httpCalls
	cancels *cancels
	inner   http.Handler
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		token := rand.Text()
		r = r.Clone(r.Context())
		r.Header.Set(postHeader, token)
		h.inspect(r)
		h.calls.addPost(token, r.Context())
		defer h.calls.removePost(token)
	case http.MethodDelete:
		if id := r.Header.Get(sessionHeader); id != "" {
			h.calls.cancelSession(id)
		}
	}
	h.inner.ServeHTTP(w, r)
}

// inspect passes a POST carrying one JSON-RPC message through
// cancels.inspect, rewriting the body when it tags a call.
func (h *httpHandler) inspect(r *http.Request) {
	if r.Body == nil {
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxInspectBytes+1))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), rest), rest}
	if err != nil || len(b) > maxInspectBytes {
		return
	}
	msg, err := jsonrpc.DecodeMessage(b)
	if err != nil {
		return // a batch or bad JSON: the SDK answers it
	}
	if out := h.cancels.inspect(r.Header.Get(sessionHeader), msg); out != msg {
		if nb, err := jsonrpc.EncodeMessage(out); err == nil {
			r.Body = io.NopCloser(bytes.NewReader(nb))
			r.ContentLength = int64(len(nb))
			r.Header.Set("Content-Length", strconv.Itoa(len(nb)))
		}
	}
}

// httpCalls tracks the POSTs being served and the tool calls in flight.
type httpCalls struct {
	mu       sync.Mutex
	posts    map[string]context.Context                   // POST token → its request context
	sessions map[string]map[*context.CancelCauseFunc]bool // session id → its calls' cancels
}

func newHTTPCalls() *httpCalls {
	return &httpCalls{posts: map[string]context.Context{}, sessions: map[string]map[*context.CancelCauseFunc]bool{}}
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
		(*cancel)(errSessionDeleted)
	}
}

// caller returns the scoped API key (interaction.Caller) of the POST that
// carried req; a call whose POST is gone (its context already ended by
// track) gets a key that may do nothing rather than the all-powerful nil.
func (c *httpCalls) caller(req *mcpsdk.CallToolRequest) *interaction.Caller {
	if post, tagged, ok := c.post(req); tagged && ok {
		return interaction.CallerFrom(post)
	}
	return noCaller
}

// post returns the context of the POST that carried req: tagged is false
// for a call that came otherwise, ok false when that POST has ended.
func (c *httpCalls) post(req *mcpsdk.CallToolRequest) (post context.Context, tagged, ok bool) {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil, false, false
	}
	token := req.Extra.Header.Get(postHeader)
	if token == "" {
		return nil, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	post, ok = c.posts[token]
	return post, true, ok
}

// noCaller owns no ask and may ask nowhere.
var noCaller = &interaction.Caller{Key: "-", Channels: []string{"-"}, Workspaces: []string{"-"}}

// track arranges for cancel to be called when the POST that carried req
// ends, or its session is deleted. The returned func undoes that.
func (c *httpCalls) track(req *mcpsdk.CallToolRequest, cancel context.CancelCauseFunc) (untrack func()) {
	stop := func() bool { return false }
	switch post, tagged, ok := c.post(req); {
	case ok:
		stop = context.AfterFunc(post, func() { cancel(errPostDropped) })
	case tagged:
		cancel(errPostDropped) // the POST has already ended
	}
	var id string
	if req.Session != nil {
		id = req.Session.ID()
	}
	key := &cancel
	c.mu.Lock()
	if c.sessions[id] == nil {
		c.sessions[id] = map[*context.CancelCauseFunc]bool{}
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
