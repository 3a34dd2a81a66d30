package bot

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
)

// orderHandler records the ids of the interactive envelopes it is handed,
// in order. Handed the envelope hold names, it closes held and waits for
// release.
type orderHandler struct {
	hold          string
	held, release chan struct{}

	mu  sync.Mutex
	ids []string
}

func (h *orderHandler) Hello(string) {}

func (h *orderHandler) Interactive(_ context.Context, env *Envelope) {
	if env.ID == h.hold {
		close(h.held)
		<-h.release
	}
	h.mu.Lock()
	h.ids = append(h.ids, env.ID)
	h.mu.Unlock()
	env.Ack(nil)
}

// TestOrderLineRoutesInPutOrder puts a burst on the line, then a second
// one while run is routing the first (held on its first envelope),
// then a third: every envelope is routed once, in the order put. The
// second burst goes into the array run is not reading from; were the two
// arrays one, it would overwrite the batch being routed.
func TestOrderLineRoutesInPutOrder(t *testing.T) {
	h := &orderHandler{hold: "b0-0", held: make(chan struct{}), release: make(chan struct{})}
	s := &Socket{Handler: h}
	l := newOrderLine()
	routed := make(chan struct{})
	go func() {
		l.run()
		close(routed)
	}()
	ctx := t.Context()
	var want []string
	burst := func(b, n int) {
		for i := range n {
			id := fmt.Sprintf("b%d-%d", b, i)
			want = append(want, id)
			frame := bytes.NewBufferString(`{"envelope_id":"` + id + `","type":"interactive","payload":{"type":"block_actions"}}`)
			if !l.put(ctx, linedEnvelope{s: s, ctx: ctx, f: inbound{id: id, frame: frame, acked: true}, done: func() {}}) {
				t.Fatalf("put %s: line refused it", id)
			}
		}
		l.wake()
	}
	burst(0, 5)
	<-h.held // run took burst 0 and is routing it
	burst(1, 7)
	close(h.release)
	burst(2, 3)
	l.close()
	<-routed
	if !slices.Equal(h.ids, want) {
		t.Fatalf("routed %v, want %v", h.ids, want)
	}
}
