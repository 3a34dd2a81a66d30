package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that ends before its ask does either keeps the ask open (the
// client timed out: the person may still answer and get_answer fetches it)
// or withdraws it (the client meant to stop). The SDK cancels a call's
// context on notifications/cancelled without saying why, so the transports
// here read the reason first: they tag every tools/call with its JSON-RPC
// id (callMetaKey in _meta) and record the reason of every
// notifications/cancelled by session and id, before the SDK sees either.

// callMetaKey is the _meta key that carries a tools/call's JSON-RPC id to
// its handler. A value a client sends is overwritten.
const callMetaKey = "io.slackask/rpc-id"

// reasonGrace is how long a call whose HTTP request dropped waits for the
// notifications/cancelled that may follow (the go-sdk client drops the
// request first, then notifies).
const reasonGrace = 2 * time.Second

// Why a call's context ended, besides the SDK's own cancellation.
var (
	errShutdown       = errors.New("the server is shutting down")
	errSessionDeleted = errors.New("the client deleted its session")
	errPostDropped    = errors.New("the HTTP request carrying the call ended")
)

// timeoutReason reports whether the reason of a notifications/cancelled says
// the client gave up waiting rather than meaning to stop: the TypeScript SDK
// (Claude Code, the Agent SDK) sends "McpError: MCP error -32001: Request
// timed out", the go-sdk "context deadline exceeded".
func timeoutReason(reason string) bool {
	r := strings.ToLower(reason)
	for _, w := range []string{"timeout", "timed out", "time out", "deadline", "-32001"} {
		if strings.Contains(r, w) {
			return true
		}
	}
	return false
}

type callKey struct{ session, id string }

// maxTracked bounds the calls cancels tracks. A tools/call whose handler
// never runs (an unknown tool) is never forgotten; past the bound the
// tracking starts afresh, and a call in flight then is withdrawn on any
// cancel, as without tracking.
const maxTracked = 10000

// cancels records the reasons of notifications/cancelled for the tagged
// calls in flight.
type cancels struct {
	mu       sync.Mutex
	inflight map[callKey]bool
	reasons  map[callKey]string
	arrived  map[callKey]chan struct{} // closed when the reason is recorded
}

func newCancels() *cancels {
	return &cancels{inflight: map[callKey]bool{}, reasons: map[callKey]string{}, arrived: map[callKey]chan struct{}{}}
}

func (c *cancels) track(k callKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inflight) >= maxTracked {
		clear(c.inflight)
		clear(c.reasons)
	}
	c.inflight[k] = true
}

func (c *cancels) record(k callKey, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.reasons[k]; ok || !c.inflight[k] {
		return
	}
	c.reasons[k] = reason
	if ch, ok := c.arrived[k]; ok {
		close(ch)
		delete(c.arrived, k)
	}
}

// reason returns the recorded reason of k, waiting up to grace for it.
func (c *cancels) reason(k callKey, grace time.Duration) (string, bool) {
	c.mu.Lock()
	r, ok := c.reasons[k]
	if ok || grace <= 0 {
		c.mu.Unlock()
		return r, ok
	}
	ch, waiting := c.arrived[k]
	if !waiting {
		ch = make(chan struct{})
		c.arrived[k] = ch
	}
	c.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok = c.reasons[k]
	return r, ok
}

// forget drops what is known of k once its call has returned.
func (c *cancels) forget(k callKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, k)
	delete(c.reasons, k)
	delete(c.arrived, k)
}

// inspect tags a tools/call with its id and records a cancel's reason; it
// returns msg, possibly with new params.
func (c *cancels) inspect(session string, msg jsonrpc.Message) jsonrpc.Message {
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg
	}
	switch req.Method {
	case "tools/call":
		if !req.ID.IsValid() {
			return msg
		}
		id := idString(req.ID.Raw())
		if p, err := tagParams(req.Params, id); err == nil {
			c.track(callKey{session, id})
			cp := *req
			cp.Params = p
			return &cp
		}
	case "notifications/cancelled":
		var p mcpsdk.CancelledParams
		if json.Unmarshal(req.Params, &p) != nil {
			return msg
		}
		if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
			c.record(callKey{session, idString(id.Raw())}, p.Reason)
		}
	}
	return msg
}

// tagParams sets _meta[callMetaKey] = id in a call's params.
func tagParams(params json.RawMessage, id string) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, err
		}
	}
	meta := map[string]any{}
	if m, ok := obj["_meta"]; ok && string(m) != "null" {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, err
		}
	}
	meta[callMetaKey] = id
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	obj["_meta"] = b
	return json.Marshal(obj)
}

func idString(raw any) string { return fmt.Sprintf("%T:%v", raw, raw) }

// keyOf returns the key of a call tagged by a transport of this package.
func keyOf(req *mcpsdk.CallToolRequest) (callKey, bool) {
	id, ok := req.Params.Meta[callMetaKey].(string)
	if !ok {
		return callKey{}, false
	}
	var session string
	if req.Session != nil {
		session = req.Session.ID()
	}
	return callKey{session, id}, true
}

// cancelTransport is a Transport whose connection passes every message it
// reads through cancels.inspect (the stdio side).
type cancelTransport struct {
	mcpsdk.Transport
	cancels *cancels
}

func (t cancelTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return cancelConn{Connection: conn, cancels: t.cancels}, nil
}

type cancelConn struct {
	mcpsdk.Connection
	cancels *cancels
}

func (c cancelConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	return c.cancels.inspect(c.Connection.SessionID(), msg), nil
}
