package dsh

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// The ids of the captured frames in testdata/frames.
const (
	fixtureRPC     = "5df95002-54c1-4418-b73c-ddfed64b51c6"
	fixtureSession = "session-dd94465e-cd75-4eb5-9e5b-bd8696c51f63"
	abortedSession = "session-800099e4-0c77-4e5c-8414-277f6f8d8171"
)

func TestNewChecksConfig(t *testing.T) {
	svc := newFakeService()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no service", Config{URL: "http://127.0.0.1:3080"}},
		{"no url", Config{Service: svc}},
		{"relative url", Config{URL: "127.0.0.1:3080", Service: svc}},
		{"ftp", Config{URL: "ftp://127.0.0.1:3080", Service: svc}},
		{"user info", Config{URL: "http://u:p@127.0.0.1:3080", Service: svc}},
	} {
		if _, err := New(tc.cfg); err == nil {
			t.Errorf("%s: New accepted %+v", tc.name, tc.cfg)
		}
	}
	b, err := New(Config{URL: "http://127.0.0.1:3080/dsh/", Service: svc})
	if err != nil {
		t.Fatal(err)
	}
	if b.muxURL != "ws://127.0.0.1:3080/dsh/api/events.mux" || b.base != "http://127.0.0.1:3080/dsh" {
		t.Errorf("endpoints %q %q", b.muxURL, b.base)
	}
	if b.cfg.Backoff != (Backoff{DefaultBackoffMin, DefaultBackoffMax}) || b.cfg.RespondAttempts != DefaultRespondAttempts ||
		b.cfg.ReconcileAfter != DefaultReconcileAfter {
		t.Errorf("defaults not applied: %+v", b.cfg)
	}
	if err := b.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("Ready before Run = %v, want not started", err)
	}
}

func TestQuestionBecomesAsk(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)
	eventually(t, "the mux client", func() bool { return host.Clients() == 1 })

	host.Broadcast(fixture(t, "session-projection-title.json"))
	rpc, err := host.AskFrame(fixture(t, "question-requested.json"))
	if err != nil || rpc != fixtureRPC {
		t.Fatalf("AskFrame = %q, %v", rpc, err)
	}
	ask := svc.askByKey(t, "dsh:"+fixtureRPC)
	calls := svc.createCalls()
	if len(calls) != 1 {
		t.Fatalf("%d Create calls, want 1", len(calls))
	}
	in := calls[0].In
	want := interaction.AskInput{
		Request: interaction.Request{
			Questions: widgetQuestions(),
			Agent:     &interaction.Agent{ID: "dsh:" + fixtureSession, Name: "Fake title"},
		},
		Channel: "CDSH", IdempotencyKey: "dsh:" + fixtureRPC,
	}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("Create input\n got %s\nwant %s", mustJSONString(t, in), mustJSONString(t, want))
	}
	if ask.ThreadTS != "" || ask.Status != interaction.StatusPending {
		t.Errorf("ask %+v: want a pending top-level ask", ask)
	}

	// A session without a title is named after the harness.
	rpc2 := host.Ask("session-untitled", widgetQuestions()[:1])
	a2 := svc.askByKey(t, "dsh:"+rpc2)
	if a2.Agent == nil || a2.Agent.ID != "dsh:session-untitled" || a2.Agent.Name != DefaultTitle {
		t.Errorf("agent %+v, want dsh:session-untitled / %s", a2.Agent, DefaultTitle)
	}
	if err := hs.b.Ready(context.Background()); err != nil {
		t.Errorf("Ready while connected = %v", err)
	}
}

func TestAnsweredRespondsWithTheAnswer(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)

	rpc := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	svc.answer(t, ask.ID, item("color", "Blue"), item("features", "Logging", "Tracing"))

	res := waitResult(t, host, rpc)
	if res.Outcome != "answered" || res.Via != "respond" || res.SessionID != "s1" {
		t.Errorf("result %+v", res)
	}
	const model = `{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":["Logging","Tracing"]}]}`
	if res.ModelText != model {
		t.Errorf("model got %s\nwant %s", res.ModelText, model)
	}
	rs := host.Responds()
	if len(rs) != 1 || !rs[0].Accepted {
		t.Fatalf("responds %+v, want one accepted", rs)
	}
	wantBody := `{"type":"client-response","rpcId":"` + rpc + `","result":{"ok":true,"value":{"sessionId":"s1","answer":` + model + `}}}`
	if string(rs[0].Body) != wantBody {
		t.Errorf("body\n got %s\nwant %s", rs[0].Body, wantBody)
	}

	// Custom text and a skip.
	rpc2 := host.Ask("s1", widgetQuestions())
	ask2 := svc.askByKey(t, "dsh:"+rpc2)
	svc.answer(t, ask2.ID, customItem("color", "Green & <b>bold</b>, \"please\""), item("features"))
	res2 := waitResult(t, host, rpc2)
	if want := `{"answers":[{"id":"color","selected":[],"custom":"Green & <b>bold</b>, \"please\""},{"id":"features","selected":[]}]}`; res2.ModelText != want {
		t.Errorf("model got %s\nwant %s", res2.ModelText, want)
	}

	hs.idle() // question/resolved frames arrive after the replies
	if w := svc.withdrawCalls(); len(w) != 0 {
		t.Errorf("answered asks were withdrawn: %+v", w)
	}
	if rs := host.Responds(); len(rs) != 2 || !strings.Contains(string(rs[1].Body), `"custom":"Green & <b>bold</b>, \"please\""`) {
		t.Errorf("responds %+v, want 2 and the custom text unescaped", rs)
	}
}

func TestAnswerIsFixedOrCancelled(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)

	// Fixable: out of order, a repeated label, custom text with labels, a
	// missing item.
	rpc := host.Ask("s1", append(widgetQuestions(), interaction.Question{ID: "name", Question: "Name?"}))
	ask := svc.askByKey(t, "dsh:"+rpc)
	svc.answer(t, ask.ID, customItem("features", "All of them", "Logging"), item("color", "Blue", "Blue"))
	res := waitResult(t, host, rpc)
	if want := `{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":[],"custom":"All of them"},{"id":"name","selected":[]}]}`; res.Outcome != "answered" || res.ModelText != want {
		t.Errorf("result %+v\nwant model text %s", res, want)
	}

	// Not fixable: two labels for a single-select question.
	rpc2 := host.Ask("s1", widgetQuestions())
	ask2 := svc.askByKey(t, "dsh:"+rpc2)
	svc.answer(t, ask2.ID, item("color", "Blue", "Red (Recommended)"), item("features"))
	res2 := waitResult(t, host, rpc2)
	if res2.Outcome != "cancelled" || res2.ErrorCode != "cancelled" || !strings.Contains(res2.ErrorMessage, "does not fit") {
		t.Errorf("result %+v, want cancelled saying the answer does not fit", res2)
	}
	for _, r := range host.Responds() {
		if !r.Accepted {
			t.Errorf("the host refused %s: %s", r.Body, r.Reason)
		}
	}
}

func TestFixAnswer(t *testing.T) {
	req := interaction.Request{Questions: append(widgetQuestions(), interaction.Question{ID: "free", Question: "Anything else?"})}
	for _, tc := range []struct {
		name string
		in   []interaction.AnswerItem
		want string // JSON of the fixed answer, or "error"
	}{
		{"valid unchanged", []interaction.AnswerItem{item("color", "Blue"), item("features", "Metrics", "Logging"), customItem("free", " x ")},
			`{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":["Metrics","Logging"]},{"id":"free","selected":[],"custom":" x "}]}`},
		{"reordered and filled", []interaction.AnswerItem{item("features", "Tracing")},
			`{"answers":[{"id":"color","selected":[]},{"id":"features","selected":["Tracing"]},{"id":"free","selected":[]}]}`},
		{"nil selected", []interaction.AnswerItem{{ID: "color"}, {ID: "features"}, {ID: "free"}},
			`{"answers":[{"id":"color","selected":[]},{"id":"features","selected":[]},{"id":"free","selected":[]}]}`},
		{"custom replaces labels", []interaction.AnswerItem{customItem("color", "Green", "Blue")},
			`{"answers":[{"id":"color","selected":[],"custom":"Green"},{"id":"features","selected":[]},{"id":"free","selected":[]}]}`},
		{"blank custom is none", []interaction.AnswerItem{customItem("color", "  ", "Blue"), customItem("free", "\t")},
			`{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":[]},{"id":"free","selected":[]}]}`},
		{"repeated labels", []interaction.AnswerItem{item("features", "Logging", "Logging", "Metrics")},
			`{"answers":[{"id":"color","selected":[]},{"id":"features","selected":["Logging","Metrics"]},{"id":"free","selected":[]}]}`},
		{"same item twice", []interaction.AnswerItem{item("color", "Blue"), item("color", "Blue")},
			`{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":[]},{"id":"free","selected":[]}]}`},
		{"unknown label", []interaction.AnswerItem{item("color", "Green")}, "error"},
		{"label on a question without options", []interaction.AnswerItem{item("free", "Blue")}, "error"},
		{"two labels single-select", []interaction.AnswerItem{item("color", "Blue", "Red (Recommended)")}, "error"},
		{"unknown question", []interaction.AnswerItem{item("size", "L")}, "error"},
		{"conflicting items", []interaction.AnswerItem{item("color", "Blue"), item("color")}, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fixAnswer(req, interaction.Answer{Answers: tc.in})
			if tc.want == "error" {
				if err == nil {
					t.Fatalf("fixAnswer = %s, want an error", mustJSONString(t, got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := mustJSONString(t, got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
			if err := interaction.CheckAnswer(req, got); err != nil {
				t.Errorf("fixed answer fails CheckAnswer: %v", err)
			}
		})
	}
}

func TestEndedInSlackRespondsCancelled(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)

	for _, tc := range []struct {
		name    string
		end     func(t *testing.T, id string)
		message string
	}{
		{"cancelled by a person", svc.cancel, "a person cancelled the question in Slack (cancelled by ana)"},
		{"expired", svc.expire, "the question timed out: nobody answered in Slack before the deadline"},
		{"withdrawn by slackask's caller", svc.abort, "the question was withdrawn in slackask (the caller withdrew the question)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rpc := host.Ask("s-"+tc.name, widgetQuestions())
			ask := svc.askByKey(t, "dsh:"+rpc)
			tc.end(t, ask.ID)
			res := waitResult(t, host, rpc)
			if res.Outcome != "cancelled" || res.Via != "respond" || res.ErrorCode != "cancelled" || res.ErrorMessage != tc.message {
				t.Errorf("result %+v, want cancelled with %q", res, tc.message)
			}
			rs := host.Responds()
			last := rs[len(rs)-1]
			var body map[string]any
			if err := json.Unmarshal(last.Body, &body); err != nil {
				t.Fatal(err)
			}
			wantBody := map[string]any{"type": "client-response", "rpcId": rpc, "result": map[string]any{
				"ok": false, "error": map[string]any{"code": "cancelled", "message": tc.message, "details": map[string]any{}}}}
			if !reflect.DeepEqual(body, wantBody) {
				t.Errorf("body %s", last.Body)
			}
		})
	}
	hs.idle()
	if w := svc.withdrawCalls(); len(w) != 0 {
		t.Errorf("asks ended in Slack were withdrawn: %+v", w)
	}
}

func TestHostSettlesFirst(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)

	cases := []struct {
		name   string
		settle func(rpc, session string)
		note   string
	}{
		{"answered in another client", func(rpc, _ string) {
			if err := host.AnswerElsewhere(rpc, interaction.Answer{Answers: []interaction.AnswerItem{item("color", "Blue"), item("features")}}); err != nil {
				t.Error(err)
			}
		}, NoteAnsweredElsewhere},
		{"cancelled in another client", func(rpc, _ string) {
			if err := host.CancelElsewhere(rpc); err != nil {
				t.Error(err)
			}
		}, NoteAgentStopped},
		{"turn interrupted", func(_, session string) { host.Interrupt(session) }, NoteAgentStopped},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			session := "s-" + strings.ReplaceAll(tc.name, " ", "-")
			rpc := host.Ask(session, widgetQuestions())
			ask := svc.askByKey(t, "dsh:"+rpc)
			tc.settle(rpc, session)
			w := waitWithdrawal(t, svc, ask.ID)
			if w.Note != tc.note {
				t.Errorf("note %q, want %q", w.Note, tc.note)
			}
			if a := svc.ask(ask.ID); a.Status != interaction.StatusAborted {
				t.Errorf("status %s, want aborted", a.Status)
			}
		})
	}
	hs.idle()
	if rs := host.Responds(); len(rs) != 0 {
		t.Errorf("the bridge replied to settled questions: %+v", rs)
	}
}

func TestHostSettlesFirstCapturedFrames(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)

	// The captured question/resolved "answered" names the captured question.
	if _, err := host.AskFrame(fixture(t, "question-requested.json")); err != nil {
		t.Fatal(err)
	}
	ask := svc.askByKey(t, "dsh:"+fixtureRPC)
	host.Broadcast(fixture(t, "question-resolved-answered.json"))
	if w := waitWithdrawal(t, svc, ask.ID); w.Note != NoteAnsweredElsewhere {
		t.Errorf("note %q, want %q", w.Note, NoteAnsweredElsewhere)
	}

	// The captured turn/end "aborted" ends the questions of its session,
	// even without question/resolved.
	rpc := host.Ask(abortedSession, widgetQuestions())
	ask2 := svc.askByKey(t, "dsh:"+rpc)
	host.Broadcast(fixture(t, "question-resolved-cancelled.json")) // another session's question: ignored
	host.Broadcast(fixture(t, "session-event-turn-end-aborted.json"))
	if w := waitWithdrawal(t, svc, ask2.ID); w.Note != NoteAgentStopped {
		t.Errorf("note %q, want %q", w.Note, NoteAgentStopped)
	}
	if n := len(svc.withdrawCalls()); n != 2 {
		t.Errorf("%d withdrawals, want 2", n)
	}
}

func TestNotPendingWithdraws(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)

	rpc := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	host.Forget(rpc) // settled without a question/resolved the bridge could see
	svc.answer(t, ask.ID, item("color", "Blue"), item("features"))
	w := waitWithdrawal(t, svc, ask.ID)
	if w.Note != NoteAnsweredElsewhere {
		t.Errorf("note %q, want %q", w.Note, NoteAnsweredElsewhere)
	}
	rs := host.Responds()
	if len(rs) != 1 || rs[0].Accepted || rs[0].Reason != "not-pending" {
		t.Errorf("responds %+v, want one not-pending", rs)
	}
}

func TestSessionQuestionsShareAThread(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)
	eventually(t, "the mux client", func() bool { return host.Clients() == 1 })

	// Back to back: the second must wait for the first to become the root.
	a1 := host.Ask("A", widgetQuestions())
	a2 := host.Ask("A", widgetQuestions())
	b1 := host.Ask("B", widgetQuestions())
	askA1, askA2, askB1 := svc.askByKey(t, "dsh:"+a1), svc.askByKey(t, "dsh:"+a2), svc.askByKey(t, "dsh:"+b1)
	if askA1.ThreadTS != "" || askB1.ThreadTS != "" {
		t.Errorf("first asks of a session must be top level: A1 %q B1 %q", askA1.ThreadTS, askB1.ThreadTS)
	}
	if askA2.ThreadTS != askA1.TS || askA2.Channel != "CDSH" {
		t.Errorf("A2 in thread %q of %s, want %q of CDSH", askA2.ThreadTS, askA2.Channel, askA1.TS)
	}
	// Answering the root does not end the thread.
	svc.answer(t, askA1.ID, item("color", "Blue"), item("features"))
	waitResult(t, host, a1)
	a3 := host.Ask("A", widgetQuestions())
	if askA3 := svc.askByKey(t, "dsh:"+a3); askA3.ThreadTS != askA1.TS {
		t.Errorf("A3 in thread %q, want %q", askA3.ThreadTS, askA1.TS)
	}
}

func TestReplayAfterReconnectDoesNotAskAgain(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)

	rpc := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	host.DropClients()
	eventually(t, "a reconnect", func() bool { return len(upgraded(host)) == 2 && host.Clients() == 1 })
	eventually(t, "the replay", func() bool {
		return strings.Contains(hs.logs.String(), "replay of a question already being served")
	})
	if n := svc.numAsks(); n != 1 {
		t.Fatalf("%d asks after the replay, want 1", n)
	}
	svc.answer(t, ask.ID, item("color", "Red (Recommended)"), item("features", "Metrics"))
	if res := waitResult(t, host, rpc); res.Outcome != "answered" {
		t.Errorf("result %+v", res)
	}
	if rs := host.Responds(); len(rs) != 1 {
		t.Errorf("%d responds, want 1", len(rs))
	}
}

func TestRestartReattachesAndKeepsThreads(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	first := start(t, host, svc)
	eventually(t, "the mux client", func() bool { return host.Clients() == 1 })

	host.SetTitle("S", "Refactor the widget")
	q1 := host.Ask("S", widgetQuestions())
	ask1 := svc.askByKey(t, "dsh:"+q1)
	q2 := host.Ask("S", widgetQuestions())
	ask2 := svc.askByKey(t, "dsh:"+q2)
	if ask2.ThreadTS != ask1.TS {
		t.Fatalf("ask2 thread %q, want %q", ask2.ThreadTS, ask1.TS)
	}
	svc.answer(t, ask1.ID, item("color", "Blue"), item("features"))
	waitResult(t, host, q1)

	// slackask restarts: a new bridge over the same (durable) service.
	first.stop()
	eventually(t, "the old client to go", func() bool { return host.Clients() == 0 })
	creates := len(svc.createCalls())
	start(t, host, svc)

	// The host replays q2: the bridge re-attaches to ask2.
	eventually(t, "the re-attach", func() bool { return len(svc.createCalls()) == creates+1 })
	re := svc.createCalls()[creates]
	if re.Created || re.AskID != ask2.ID || re.In.IdempotencyKey != "dsh:"+q2 || re.In.ThreadTS != ask1.TS {
		t.Errorf("replay Create %+v: want a re-attach to %s in thread %s", re, ask2.ID, ask1.TS)
	}
	if n := svc.numAsks(); n != 2 {
		t.Errorf("%d asks, want 2", n)
	}
	// A new question of the session goes to the old thread, with the old title.
	q3 := host.Ask("S", widgetQuestions())
	ask3 := svc.askByKey(t, "dsh:"+q3)
	if ask3.ThreadTS != ask1.TS || ask3.Agent.Name != "Refactor the widget" {
		t.Errorf("ask3 thread %q name %q, want %q / Refactor the widget", ask3.ThreadTS, ask3.Agent.Name, ask1.TS)
	}
	svc.answer(t, ask2.ID, item("color", "Red (Recommended)"), item("features", "Tracing"))
	if res := waitResult(t, host, q2); res.Outcome != "answered" || res.Via != "respond" {
		t.Errorf("q2 result %+v", res)
	}
}

func TestRebuildPicksTheOldestRootInTheChannel(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	now := time.Now()
	agent := &interaction.Agent{ID: "dsh:S", Name: "Old title"}
	ended := interaction.StatusAnswered
	// 250 asks so that the history spans pages; several share an instant.
	for i := range 250 {
		svc.seed(interaction.Ask{ID: "x" + pad(i), Status: ended, Agent: &interaction.Agent{ID: "other"},
			Channel: "CDSH", TS: "1600000000." + pad(i), CreatedAt: now.Add(-time.Duration(i/7) * time.Minute)}, "")
	}
	svc.seed(interaction.Ask{ID: "root-other-channel", Status: ended, Agent: agent, Channel: "COTHER", TS: "1500000000.000001", CreatedAt: now.Add(-72 * time.Hour)}, "")
	svc.seed(interaction.Ask{ID: "root", Status: ended, Agent: agent, Channel: "CDSH", TS: "1500000000.000002", CreatedAt: now.Add(-48 * time.Hour)}, "")
	svc.seed(interaction.Ask{ID: "reply", Status: ended, Agent: agent, Channel: "CDSH", TS: "1500000000.000003", ThreadTS: "1500000000.000002", CreatedAt: now.Add(-47 * time.Hour)}, "")
	svc.seed(interaction.Ask{ID: "later-top", Status: ended, Agent: agent, Channel: "CDSH", TS: "1500000000.000004", CreatedAt: now.Add(-30 * time.Minute)}, "")
	start(t, host, svc)

	rpc := host.Ask("S", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	if ask.ThreadTS != "1500000000.000002" || ask.Agent.Name != "Old title" {
		t.Errorf("thread %q name %q, want 1500000000.000002 / Old title", ask.ThreadTS, ask.Agent.Name)
	}
	var seen int
	b, _ := New(testConfig(host, svc))
	if err := b.eachAsk(context.Background(), "", func(interaction.Ask) { seen++ }); err != nil || seen != svc.numAsks() {
		t.Errorf("eachAsk saw %d of %d asks (err %v)", seen, svc.numAsks(), err)
	}
}

func pad(i int) string { return fmt.Sprintf("%06d", i) }

func TestReconnectsWithBackoffAndReportsReady(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	host.RejectConnects(1000)
	cfg := testConfig(host, svc)
	cfg.Backoff = Backoff{Min: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	cfg.Logger = zerologDiscard()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	stopped := false
	stop := func() {
		cancel()
		if !stopped {
			stopped = true
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
		}
	}
	defer stop()

	eventually(t, "7 refused handshakes", func() bool { return len(host.Connects()) >= 7 })
	if err := b.Ready(ctx); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("Ready while refused = %v, want an error naming the 503", err)
	}
	host.RejectConnects(0)
	eventually(t, "the connection", func() bool { return b.Ready(ctx) == nil })

	cs := host.Connects()
	delay := cfg.Backoff.Min
	for i := 1; i < 7; i++ {
		gap := cs[i].Time.Sub(cs[i-1].Time)
		if gap < delay/2 || gap > delay+250*time.Millisecond {
			t.Errorf("attempt %d came %v after the previous one; want between %v and %v", i+1, gap, delay/2, delay)
		}
		delay = min(delay*2, cfg.Backoff.Max)
	}

	// A dropped mux is reconnected, and Ready says so meanwhile.
	host.RejectConnects(3)
	host.DropClients()
	eventually(t, "Ready to fail", func() bool { return b.Ready(ctx) != nil })
	eventually(t, "the reconnection", func() bool { return b.Ready(ctx) == nil && host.Clients() == 1 })
	if n := len(upgraded(host)); n != 2 {
		t.Errorf("%d upgraded connections, want 2", n)
	}

	stop()
	if err := b.Ready(context.Background()); err == nil {
		t.Error("Ready after Run returned = nil")
	}
	if err := b.Run(context.Background()); err == nil {
		t.Error("a second Run succeeded")
	}
}

func TestRespondRetriesThenRedeliversOnReplay(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc, func(c *Config) { c.RespondAttempts = 3 })

	// Two 503s, then accepted.
	rpc := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	host.FailResponds(2)
	svc.answer(t, ask.ID, item("color", "Blue"), item("features"))
	if res := waitResult(t, host, rpc); res.Outcome != "answered" {
		t.Errorf("result %+v", res)
	}
	if rs := host.Responds(); len(rs) != 3 || rs[0].Status != 503 || rs[1].Status != 503 || !rs[2].Accepted {
		t.Errorf("responds %+v, want 503, 503, accepted", rs)
	}

	// The host stays down past the attempts: the bridge gives up, and
	// delivers again when the host replays the question.
	rpc2 := host.Ask("s1", widgetQuestions())
	ask2 := svc.askByKey(t, "dsh:"+rpc2)
	host.FailResponds(1000)
	svc.answer(t, ask2.ID, item("color", "Red (Recommended)"), item("features"))
	eventually(t, "3 more attempts", func() bool { return len(host.Responds()) == 6 })
	hs.idle() // the bridge gave up on rpc2
	if n := len(host.Responds()); n != 6 {
		t.Fatalf("%d responds, want the bridge to stop after 3 attempts", n)
	}
	host.FailResponds(0)
	host.DropClients()
	res := waitResult(t, host, rpc2)
	if res.Outcome != "answered" || res.ModelText != `{"answers":[{"id":"color","selected":["Red (Recommended)"]},{"id":"features","selected":[]}]}` {
		t.Errorf("result %+v", res)
	}
	if n := svc.numAsks(); n != 2 {
		t.Errorf("%d asks, want 2", n)
	}
}

func TestBadResponseIsNotRetried(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)

	rpc := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	host.ForceReasons("bad-response")
	svc.answer(t, ask.ID, item("color", "Blue"), item("features"))
	res := waitResult(t, host, rpc)
	if res.Outcome != "cancelled" || !strings.Contains(res.ErrorMessage, "could not deliver the answer") {
		t.Errorf("result %+v, want a cancel saying the answer was refused", res)
	}
	hs.idle()
	rs := host.Responds()
	if len(rs) != 2 || rs[0].Reason != "bad-response" || !strings.Contains(string(rs[0].Body), `"ok":true`) || !rs[1].Accepted {
		t.Errorf("responds %+v, want the answer once (bad-response) then an accepted cancel", rs)
	}
}

func TestCreateFailures(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	start(t, host, svc)

	// A request slackask cannot post: the agent gets a cancel saying why.
	var many []interaction.Question
	for i := range slackid.MaxQuestions + 1 {
		many = append(many, interaction.Question{ID: "q" + strconv.Itoa(i), Question: "Why?"})
	}
	rpc := host.Ask("s1", many)
	res := waitResult(t, host, rpc)
	if res.Outcome != "cancelled" || !strings.Contains(res.ErrorMessage, "could not post the question in Slack") ||
		!strings.Contains(res.ErrorMessage, "at most 10") {
		t.Errorf("result %+v", res)
	}
	if n := len(svc.createCalls()); n != 1 {
		t.Errorf("%d Create calls for an invalid request, want 1 (no retry)", n)
	}

	// Slack hiccups are retried.
	svc.failCreates(interaction.Errorf(interaction.SlackError, "ratelimited"), errors.New("database is locked"))
	rpc2 := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc2)
	if n := len(svc.createCalls()); n != 4 {
		t.Errorf("%d Create calls, want 1 + 3", n)
	}
	if ask.ThreadTS != "" {
		t.Errorf("the first posted ask of s1 must be the root, got thread %q", ask.ThreadTS)
	}
}

func TestReconcileWithdrawsQuestionsTheHostForgot(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	old := time.Now().Add(-time.Hour)

	// Before slackask started: one question still pending at the host, one
	// the host settled meanwhile, and an ask that is not dsh's.
	live := host.Ask("S", widgetQuestions())
	svc.seed(interaction.Ask{ID: "live", Status: interaction.StatusPending, Questions: widgetQuestions(),
		Agent: &interaction.Agent{ID: "dsh:S", Name: "t"}, Channel: "CDSH", TS: "1.1", CreatedAt: old}, "dsh:"+live)
	svc.seed(interaction.Ask{ID: "gone", Status: interaction.StatusPending, Questions: widgetQuestions(),
		Agent: &interaction.Agent{ID: "dsh:S", Name: "t"}, Channel: "CDSH", TS: "1.2", ThreadTS: "1.1", CreatedAt: old.Add(time.Second)}, "dsh:gone-rpc")
	svc.seed(interaction.Ask{ID: "http", Status: interaction.StatusPending, Questions: widgetQuestions(),
		Agent: &interaction.Agent{ID: "ci-bot"}, Channel: "CDSH", TS: "1.3", CreatedAt: old}, "")
	hs := start(t, host, svc, func(c *Config) { c.ReconcileAfter = 30 * time.Millisecond })

	if w := waitWithdrawal(t, svc, "gone"); w.Note != NoteAgentStopped {
		t.Errorf("note %q, want %q", w.Note, NoteAgentStopped)
	}
	// A question the bridge serves, settled while it was disconnected.
	rpc := host.Ask("S", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	host.Forget(rpc)
	host.DropClients()
	if w := waitWithdrawal(t, svc, ask.ID); w.Note != NoteAgentStopped {
		t.Errorf("note %q, want %q", w.Note, NoteAgentStopped)
	}
	// The reconcile round of the new connection runs to its end.
	eventually(t, "the second reconcile round", func() bool { return hs.logCount("dsh: reconciled") >= 2 })
	for _, id := range []string{"live", "http"} {
		if a := svc.ask(id); a.Status != interaction.StatusPending {
			t.Errorf("ask %s is %s, want pending", id, a.Status)
		}
	}
	// The live one is still served.
	svc.answer(t, "live", item("color", "Blue"), item("features"))
	if res := waitResult(t, host, live); res.Outcome != "answered" {
		t.Errorf("live result %+v", res)
	}
	if rs := host.Responds(); len(rs) != 1 {
		t.Errorf("responds %+v, want only the live answer", rs)
	}
}

func TestStopLeavesAsksPending(t *testing.T) {
	host := newHost(t)
	svc := newFakeService()
	hs := start(t, host, svc)
	rpc := host.Ask("s1", widgetQuestions())
	ask := svc.askByKey(t, "dsh:"+rpc)
	hs.stop()
	if a := svc.ask(ask.ID); a.Status != interaction.StatusPending {
		t.Errorf("ask is %s after stop, want pending", a.Status)
	}
	if p := host.Pending(); len(p) != 1 || p[0] != rpc {
		t.Errorf("host pending %v", p)
	}
	if len(host.Responds()) != 0 || len(svc.withdrawCalls()) != 0 {
		t.Error("stopping replied or withdrew")
	}
}
