package bot

import (
	"context"
	"testing"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
	"github.com/slackask/slackask/store/postgres"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// stopWithALateClick arms a click the bot acks with nothing to store (an
// empty block_actions), which the fake writes when it reads a close frame
// of the bot's, so the bot reads it after its close frame went out; then
// it calls stop and checks that the click was acked within Slack's 3 s.
func (r *rig) stopWithALateClick(stop func()) {
	r.t.Helper()
	ack, err := r.fake.DeliverAtClientClose(map[string]any{"type": "block_actions", "user": map[string]any{"id": alice}, "actions": []any{}})
	if err != nil {
		r.t.Fatal(err)
	}
	stop()
	if _, err := ack(r.ctx()); err != nil {
		r.t.Fatalf("the click that crossed a close frame: %v", err)
	}
	if n := r.fake.UnackedInteractions(); n != 0 {
		r.t.Fatalf("%d clicks unacked", n)
	}
}

// A stopping bot closes its connections one at a time; the ack of an
// envelope Slack wrote to the first in the instant before it read that
// connection's close frame goes out on the second, still open.
func TestSocketLateEnvelopeAckedOnASibling(t *testing.T) {
	r := newRig(t)
	r.conns = 2
	b, stop := r.start()
	r.waitFor("two sockets up", func() bool { return b.bot.Connected() == 2 })
	r.stopWithALateClick(stop)
}

// The last connection of a stopping replica has no sibling: the ack of
// an envelope that crossed its close frame is relayed through the shared
// store to another replica, which sends it on its own connection.
func TestSocketLateEnvelopeOnTheLastConnectionRelayed(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := memory.New()
		t.Cleanup(func() { _ = st.Close() })
		testLateEnvelopeRelayed(t, st, st)
	})
	t.Run("postgres", func(t *testing.T) {
		u := pgtest.URL(t) // skips without SLACKASK_TEST_DATABASE_URL
		open := func() store.Store {
			st, err := postgres.Open(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}
		testLateEnvelopeRelayed(t, open(), open())
	})
}

// testLateEnvelopeRelayed runs two one-connection bots, on a and b (two
// handles on one database, or one shared store), and stops the first.
func testLateEnvelopeRelayed(t *testing.T, a, b store.Store) {
	r := newRig(t)
	r.relay = true
	r.store = a
	stopping, stop := r.start()
	r.waitFor("the first replica's socket up", func() bool { return stopping.bot.Connected() == 1 })
	r.store = b
	other, _ := r.start()
	r.waitFor("the second replica's socket up", func() bool { return other.bot.Connected() == 1 && r.fake.Connections() == 2 })
	r.stopWithALateClick(stop)
}
