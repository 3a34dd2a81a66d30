package bot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// A bot whose store cannot be reached gives up its Socket Mode
// connections (so Slack sends the clicks to replicas that can store them),
// says why on Ready, opens none meanwhile (a click then reaches no one and
// the person sees an error), and connects again once the store answers.
func TestStoreDownGivesUpTheSockets(t *testing.T) {
	r := newRig(t)
	r.conns = 2
	b, _ := r.start()
	if err := r.fake.WaitConnected(r.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("go"), yesNo("again")}}})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor("message posted", func() bool { return len(r.fake.Messages(chanID)) == 1 })
	ts := r.fake.Messages(chanID)[0].TS

	if !b.bot.StoreDown(errors.New("ping: timeout")) {
		t.Fatal("StoreDown did not change an open gate")
	}
	if b.bot.StoreDown(errors.New("ping: timeout again")) {
		t.Fatal("StoreDown changed a closed gate")
	}
	r.waitFor("every socket given up", func() bool { return r.fake.Connections() == 0 })
	if err := b.Ready(r.ctx()); err == nil || !strings.Contains(err.Error(), "store unreachable") {
		t.Fatalf("Ready while the store is down: %v", err)
	}
	_, err = r.fake.Person(alice).Select(r.ctx(), chanID, ts, selectFinder(0), "no")
	if !errors.Is(err, slackfake.ErrNoConnection) {
		t.Fatalf("a click while every socket is given up: %v, want the person to see an error", err)
	}
	if got := r.fake.FailedInteractions(); len(got) != 1 {
		t.Fatalf("failed interactions shown: %+v, want the one click", got)
	}
	if r.fake.Connections() != 0 {
		t.Fatal("a socket opened while the store was down")
	}

	if !b.bot.StoreDown(nil) {
		t.Fatal("StoreDown(nil) did not open the gate")
	}
	if err := r.fake.WaitConnected(r.ctx(), 2); err != nil {
		t.Fatalf("sockets not taken back: %v", err)
	}
	r.waitFor("ready again", func() bool { return b.Ready(context.Background()) == nil })
	if _, err := r.fake.Person(alice).Select(r.ctx(), chanID, ts, selectFinder(0), "yes"); err != nil {
		t.Fatalf("a click once the store is back: %v", err)
	}
	r.waitFor("the click is stored", func() bool {
		rec, _ := r.store.Get(context.Background(), ask.ID)
		return len(rec.Progress) > 0 && len(rec.Progress[0].Selected) == 1 && rec.Progress[0].Selected[0] == "yes"
	})
}

// With the store unreachable a connection is let go at once, not after
// the envelopes read from it are settled (settleWait): they cannot be
// stored, and every moment it stays, Slack sends it more clicks.
func TestStoreDownDoesNotWaitForUnsettledEnvelopes(t *testing.T) {
	fake, err := slackfake.New(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(fake.APIURL()))
	h := &lateAcker{release: make(chan struct{})}
	g := &gate{}
	s := &Socket{Handler: h, Log: zerolog.Nop(), gate: g, Open: func(ctx context.Context) (string, error) {
		_, url, err := api.StartSocketModeContext(ctx)
		return url, err
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		h.open()
		cancel()
		<-done
		h.wg.Wait()
	}()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := fake.WaitConnected(wctx, 1); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() {
		_, err := fake.Deliver(ctx, map[string]any{"type": "block_actions", "actions": []any{}})
		held <- err
	}()
	if err := fake.WaitFor(wctx, func() bool { return s.Envelopes() == 1 }); err != nil {
		t.Fatal("the envelope never arrived")
	}
	start := time.Now()
	g.set(errors.New("ping: timeout"))
	if err := fake.WaitFor(wctx, func() bool { return fake.Connections() == 0 }); err != nil {
		t.Fatal("the connection was never let go")
	}
	if took := time.Since(start); took >= settleWait {
		t.Fatalf("the connection went %v after the store went down: it waited for its unsettled envelope", took)
	}
	if err := <-held; !errors.Is(err, slackfake.ErrAckTimeout) {
		t.Fatalf("the held envelope: %v, want the person to see an error", err)
	}
}
