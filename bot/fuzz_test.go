package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

const (
	fuzzAsk   = "afuzztarget"
	fuzzTS    = "1700000000.000100"
	fuzzTeam  = "T0FAKE"
	fuzzOther = "afuzzother"
)

// payloadSeeds are payloads shaped like Slack's, for the fuzz target's
// ask, for another ask, and forged.
var payloadSeeds = []string{
	`{"type":"block_actions","user":{"id":"U0ALICE","username":"alice","team_id":"T0FAKE"},"api_app_id":"A0FAKE","team":{"id":"T0FAKE"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C0TEST"},"trigger_id":"1.2.3","channel":{"id":"C0TEST"},"message":{"ts":"1700000000.000100"},"state":{"values":{"sa.afuzztarget.1.0.controls":{"sa.afuzztarget.1.0.select":{"type":"static_select","selected_option":{"text":{"type":"plain_text","text":"yes"},"value":"0"}}}}},"actions":[{"type":"static_select","action_id":"sa.afuzztarget.1.0.select","block_id":"sa.afuzztarget.1.0.controls","selected_option":{"text":{"type":"plain_text","text":"yes"},"value":"0"},"action_ts":"1700000001.000"}]}`,
	`{"type":"block_actions","user":{"id":"U0ALICE"},"team":{"id":"T0FAKE"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C0TEST"},"actions":[{"type":"button","action_id":"sa.afuzztarget.1.-1.submit","block_id":"sa.afuzztarget.1.-1.controls","value":"x"}]}`,
	`{"type":"block_actions","user":{"id":"U0ALICE"},"team":{"id":"T0FAKE"},"container":{"type":"message","message_ts":"1700000000.000999","channel_id":"C0TEST"},"actions":[{"type":"button","action_id":"sa.afuzztarget.1.-1.cancel","block_id":"sa.afuzztarget.1.-1.controls"}]}`,
	`{"type":"block_actions","user":{"id":"U0ALICE"},"team":{"id":"T0EVIL"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C0TEST"},"actions":[{"type":"button","action_id":"sa.afuzzother.1.-1.cancel"}]}`,
	`{"type":"block_actions","user":{"id":"U0ALICE"},"team":{"id":"T0FAKE"},"container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C0TEST"},"actions":[{"type":"multi_static_select","action_id":"sa.afuzztarget.1.1.select","selected_options":[{"value":"1"},{"value":"99"},{"value":"-1"}]}]}`,
	`{"type":"view_submission","user":{"id":"U0ALICE"},"team":{"id":"T0FAKE"},"view":{"id":"V1","callback_id":"slackask_other","private_metadata":"v1:afuzztarget:0:U0ALICE:AAAA","state":{"values":{"custom":{"text":{"type":"plain_text_input","value":"forged"}}}}}}`,
	`{"type":"view_closed","user":{"id":"U0ALICE"},"view":{"id":"V1"}}`,
	`{"type":"block_actions","actions":[null,{"action_id":"sa.afuzztarget.1.0.skip"}]}`,
}

// FuzzPayload: arbitrary interactive payload JSON never panics, its ack
// fits Slack's limit, and it never ends an ask it does not belong to (the
// ask's channel, message, team and id must all match).
func FuzzPayload(f *testing.F) {
	for _, s := range payloadSeeds {
		f.Add([]byte(s))
	}
	b, st := fuzzBot(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		cb, err := decodeInteractive(data)
		if err != nil {
			return
		}
		resetFuzzAsks(t, st)
		ack, settled := handle(b, cb)
		if !settled {
			t.Fatalf("payload never acked nor dropped: %s", data)
		}
		if ack != nil {
			if raw, err := json.Marshal(ack); err != nil || len(raw) >= 20480 {
				t.Fatalf("ack unusable: %d bytes, %v", len(raw), err)
			}
		}
		for _, id := range []string{fuzzAsk, fuzzOther} {
			rec, err := st.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status.Ended() && !belongs(cb, rec) {
				t.Fatalf("payload ended ask %s it does not belong to: %s", id, data)
			}
		}
	})
}

func TestPayloadSeedsKeepAsksAlive(t *testing.T) {
	b, st := fuzzBot(t)
	for _, s := range payloadSeeds[2:] { // the first two legitimately answer
		cb, err := decodeInteractive([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		resetFuzzAsks(t, st)
		_, _ = handle(b, cb)
		if rec, _ := st.Get(context.Background(), fuzzAsk); rec.Status.Ended() {
			t.Fatalf("seed ended the ask: %s", s)
		}
	}
}

// handle routes cb as the socket does, runs the work it calls for and
// what follows its ack, and returns the ack's payload and whether the
// envelope was settled (acked or dropped).
func handle(b *Bot, cb *callback) (ack any, settled bool) {
	env := &Envelope{Payload: cb, ackFn: func(p any) error { ack = p; return nil }, log: b.log}
	for _, j := range b.route(context.Background(), env) {
		j.fn()
	}
	b.handlers.Wait()
	return ack, env.settled.Load()
}

// belongs reports whether a block_actions payload legitimately targets rec.
func belongs(cb *callback, rec store.Record) bool {
	if cb.Type != slack.InteractionTypeBlockActions || cb.Team.ID != fuzzTeam ||
		cb.Container.ChannelID != rec.Channel || cb.Container.MessageTs != rec.TS {
		return false
	}
	for _, a := range cb.blockActions {
		if a != nil && strings.HasPrefix(a.ActionID, "sa."+rec.ID+".") {
			return true
		}
	}
	return false
}

// apiCalls counts the Web API calls made to fuzzBot's Slack, by method.
type apiCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *apiCalls) count(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

func fuzzBot(tb testing.TB) (*Bot, store.Store) {
	b, st, _ := fuzzBotCounting(tb)
	return b, st
}

func fuzzBotCounting(tb testing.TB) (*Bot, store.Store, *apiCalls) {
	tb.Helper()
	calls := &apiCalls{n: map[string]int{}}
	slackAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.mu.Lock()
		calls.n[strings.TrimPrefix(r.URL.Path, "/")]++
		calls.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"channel":"C0TEST","ts":"1700000000.000200"}`))
	}))
	tb.Cleanup(slackAPI.Close)
	st := memory.New()
	api := slack.New("xoxb-fuzz", slack.OptionAPIURL(slackAPI.URL+"/"))
	b, err := New(context.Background(), Config{API: api, Secrets: st, Logger: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	team := fuzzTeam
	b.teamID.Store(&team)
	if b.svc, err = asks.New(asks.Config{Store: st, Surface: b, DefaultChannel: "C0TEST",
		Clock: clock.NewFake(time.Unix(1700000000, 0)), Logger: zerolog.Nop()}); err != nil {
		tb.Fatal(err)
	}
	for _, id := range []string{fuzzAsk, fuzzOther} {
		rec := store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, Channel: "C0TEST", TS: fuzzTS,
			Questions: []interaction.Question{yesNo("a"), {ID: "b", Question: "Which?", MultiSelect: true, Options: []interaction.Option{{Label: "x"}, {Label: "y"}}}},
			CreatedAt: time.Unix(1700000000, 0), Responders: []string{"U0ALICE"}}, TeamID: fuzzTeam, Rev: 1}
		if id == fuzzOther {
			rec.TS = "1700000000.000300"
		}
		if _, _, err := st.Create(context.Background(), rec); err != nil {
			tb.Fatal(err)
		}
	}
	return b, st, calls
}

func resetFuzzAsks(tb testing.TB, st store.Store) {
	for _, id := range []string{fuzzAsk, fuzzOther} {
		if _, err := st.Update(context.Background(), id, func(r *store.Record) error {
			r.Status, r.Answer, r.AnsweredBy, r.EndedAt, r.Error, r.EndedBy = interaction.StatusPending, nil, nil, nil, nil, nil
			r.Progress, r.Rev = nil, 1
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSubmitWithBadStateEndsNothing: the state of a block_actions payload
// is decoded only when its Submit is handled; a state that does not decode
// then ends nothing (the same Submit with a good state answers).
func TestSubmitWithBadStateEndsNothing(t *testing.T) {
	b, st := fuzzBot(t)
	ctx := context.Background()
	submit := payloadSeeds[1]
	for _, c := range []struct {
		name, state string
		want        interaction.Status
	}{
		{"state values a list", `{"values":[1]}`, interaction.StatusPending},
		{"state a number", `7`, interaction.StatusPending},
		{"good state", `{"values":{"sa.afuzztarget.1.0.controls":{"sa.afuzztarget.1.0.select":{"type":"static_select","selected_option":{"value":"0"}}}}}`, interaction.StatusAnswered},
	} {
		t.Run(c.name, func(t *testing.T) {
			resetFuzzAsks(t, st)
			cb, err := decodeInteractive([]byte(strings.Replace(submit, `"actions":`, `"state":`+c.state+`,"actions":`, 1)))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = handle(b, cb)
			rec, err := st.Get(ctx, fuzzAsk)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != c.want {
				t.Fatalf("status %s, want %s", rec.Status, c.want)
			}
		})
	}
}

// A forged block_actions payload with many actions is handled as Slack
// would send it, with its first action only: 300 "Other…" clicks open one
// modal, 300 Cancels of asks the person may not answer post one
// ephemeral (issue 14.8).
func TestOneActionPerPayload(t *testing.T) {
	for _, c := range []struct {
		kind, method string
	}{{"other", "views.open"}, {"cancel", "chat.postEphemeral"}} {
		t.Run(c.kind, func(t *testing.T) {
			b, st, calls := fuzzBotCounting(t)
			if c.kind == "cancel" { // bob may not answer: each Cancel would be refused with an ephemeral
				if _, err := st.Update(context.Background(), fuzzAsk, func(r *store.Record) error { r.Responders = []string{"U0BOB"}; return nil }); err != nil {
					t.Fatal(err)
				}
			}
			var actions []string
			for range 300 {
				actions = append(actions, `{"type":"button","action_id":"sa.afuzztarget.1.0.`+c.kind+`","block_id":"sa.afuzztarget.1.0.controls"}`)
			}
			payload := `{"type":"block_actions","user":{"id":"U0ALICE"},"team":{"id":"T0FAKE"},"trigger_id":"1.2.3","container":{"type":"message","message_ts":"1700000000.000100","channel_id":"C0TEST"},"actions":[` + strings.Join(actions, ",") + `]}`
			cb, err := decodeInteractive([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = handle(b, cb)
			if n := calls.count(c.method); n != 1 {
				t.Fatalf("%d %s calls, want 1", n, c.method)
			}
		})
	}
}
