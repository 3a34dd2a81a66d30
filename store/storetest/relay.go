package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/slackask/slackask/store"
)

// RunAckRelay checks a store.AckRelay: a relay made through a is announced
// to b's watcher, with its origin, once it can be taken; of two takers
// one gets the frame; an entry older than the taker's maxAge is dropped.
// a and b share one database (they may be one handle, for a store of one
// process).
func RunAckRelay(t *testing.T, a, b store.AckRelay) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type note struct{ origin, id string }
	heard := make(chan note, 8)
	stop := b.WatchAcks(func(origin, id string) { heard <- note{origin, id} })
	defer stop()
	frame := []byte(`{"envelope_id":"E1","payload":{"response_action":"clear"}}`)
	if err := a.RelayAck(ctx, "replica-a", "E1", frame); err != nil {
		t.Fatalf("RelayAck: %v", err)
	}
	select {
	case n := <-heard:
		if n != (note{"replica-a", "E1"}) {
			t.Fatalf("heard %+v, want replica-a's E1", n)
		}
	case <-ctx.Done():
		t.Fatal("the relay was never announced to the other handle")
	}
	got, ok, err := b.TakeAck(ctx, "E1", store.AckWait)
	if err != nil || !ok || string(got) != string(frame) {
		t.Fatalf("TakeAck = %q %v %v, want the relayed frame", got, ok, err)
	}
	if _, ok, err := a.TakeAck(ctx, "E1", store.AckWait); ok || err != nil {
		t.Fatalf("second TakeAck = %v %v: the ack was handed out twice", ok, err)
	}
	if _, ok, err := b.TakeAck(ctx, "never", store.AckWait); ok || err != nil {
		t.Fatalf("TakeAck of an envelope never relayed = %v %v", ok, err)
	}
	if err := a.RelayAck(ctx, "replica-a", "E2", frame); err != nil {
		t.Fatalf("RelayAck: %v", err)
	}
	<-heard
	time.Sleep(20 * time.Millisecond) // the entry ages past the taker's maxAge
	if _, ok, err := b.TakeAck(ctx, "E2", 10*time.Millisecond); ok || err != nil {
		t.Fatalf("TakeAck of a stale relay = %v %v, want it dropped", ok, err)
	}
	if _, ok, err := b.TakeAck(ctx, "E2", store.AckWait); ok || err != nil {
		t.Fatalf("a stale relay was kept after its TakeAck refused it (%v %v)", ok, err)
	}
	// After stop the watcher hears nothing: a later watcher's hearing of
	// E3 marks the moment the stopped one would have.
	stop()
	later := make(chan string, 1)
	defer b.WatchAcks(func(_, id string) { later <- id })()
	if err := a.RelayAck(ctx, "replica-a", "E3", frame); err != nil {
		t.Fatalf("RelayAck: %v", err)
	}
	select {
	case <-later:
	case <-ctx.Done():
		t.Fatal("E3 never announced")
	}
	select {
	case n := <-heard:
		t.Fatalf("watcher called after stop: %+v", n)
	default:
	}
}
