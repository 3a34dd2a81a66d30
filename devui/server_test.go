package devui

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/internal/slackfake"
)

// env is the emulator with a small Socket Mode app and the UI in front.
type env struct {
	t    *testing.T
	fake *slackfake.Server
	api  *slack.Client
	ui   *UI
	srv  *httptest.Server
	http *http.Client
	got  chan slack.InteractionCallback
	// homes receives the user of every app_home_opened event.
	homes chan string
}

// startEnv runs the fake, an app that opens a modal on the "open" button
// and answers submissions (blank "bad" → errors), and the UI.
func startEnv(t *testing.T) *env {
	t.Helper()
	fake, err := slackfake.New(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fake.AddUser("U1", "alice")
	fake.AddUser("U2", "bob")
	fake.AddChannel("C1", "general")
	fake.AddChannel("C2", "private", "U2", "U0BOT")
	httpc := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(fake.APIURL()), slack.OptionHTTPClient(httpc))
	e := &env{t: t, fake: fake, api: api, got: make(chan slack.InteractionCallback, 20), homes: make(chan string, 20)}

	sm := socketmode.New(api)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = sm.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case evt := <-sm.Events:
				if evt.Type == socketmode.EventTypeEventsAPI {
					_ = sm.Ack(*evt.Request)
					if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
						if h, ok := ev.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent); ok {
							e.homes <- h.User
						}
					}
					continue
				}
				if evt.Type != socketmode.EventTypeInteractive {
					continue
				}
				cb := evt.Data.(slack.InteractionCallback)
				e.got <- cb
				var ack any
				if cb.Type == slack.InteractionTypeViewSubmission {
					if v := cb.View.State.Values["in"]["text"].Value; strings.TrimSpace(v) == "bad" {
						ack = map[string]any{"response_action": "errors", "errors": map[string]string{"in": "Not <that> one"}}
					}
				}
				_ = sm.Ack(*evt.Request, ack)
				if cb.Type == slack.InteractionTypeBlockActions && len(cb.ActionCallback.BlockActions) > 0 && cb.ActionCallback.BlockActions[0].ActionID == "open" {
					input := slack.NewPlainTextInputBlockElement(nil, "text")
					_, err := api.OpenViewContext(ctx, cb.TriggerID, slack.ModalViewRequest{
						Type: slack.VTModal, Title: txt("Your answer"), Submit: txt("Send"), Close: txt("Back"),
						Blocks: slack.Blocks{BlockSet: []slack.Block{slack.NewInputBlock("in", txt("Answer"), nil, input)}},
					})
					if err != nil {
						t.Errorf("views.open: %v", err)
					}
				}
			}
		}
	})
	if err := fake.WaitConnected(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	e.fake = fake
	e.ui = New(fake, Options{Channel: "C1", User: "U1", APIURL: "http://127.0.0.1:1", Curl: "curl <ask>", Location: time.UTC})
	e.srv = httptest.NewServer(e.ui)
	e.http = &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(func() {
		e.ui.Close()
		e.srv.Close()
		cancel()
		wg.Wait()
		fake.Close()
		httpc.CloseIdleConnections()
		e.http.CloseIdleConnections()
	})
	return e
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func txt(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

func (e *env) get(path string) (int, string) {
	e.t.Helper()
	resp, err := e.http.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *env) act(req map[string]any) actResponse {
	e.t.Helper()
	b, _ := json.Marshal(req)
	resp, err := e.http.Post(e.srv.URL+"/act", "application/json", strings.NewReader(string(b)))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out actResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) post(blocks ...slack.Block) string {
	e.t.Helper()
	_, ts, err := e.api.PostMessage("C1", slack.MsgOptionText("fallback", false), slack.MsgOptionBlocks(blocks...))
	if err != nil {
		e.t.Fatal(err)
	}
	return ts
}

func TestPageShowsConversation(t *testing.T) {
	e := startEnv(t)
	code, body := e.get("/")
	if code != 200 || !strings.Contains(body, "curl &lt;ask&gt;") || !strings.Contains(body, "Nothing here yet") {
		t.Fatalf("empty page: %d\n%s", code, body)
	}
	sel := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, txt("Choose"), "pick",
		slack.NewOptionBlockObject("a", txt("Apple"), txt("red or green")), slack.NewOptionBlockObject("b", txt("Banana"), nil))
	ts := e.post(slack.NewSectionBlock(slack.NewTextBlockObject("mrkdwn", "Hi <@U2>, *pick* one", false, false), nil, nil), slack.NewActionBlock("blk", sel))
	if _, err := e.api.PostEphemeral("C1", "U2", slack.MsgOptionText("only for bob", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.api.PostMessage("C1", slack.MsgOptionText("a reply", false), slack.MsgOptionTS(ts)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.api.PostMessage("U2", slack.MsgOptionText("a DM for bob", false)); err != nil {
		t.Fatal(err)
	}

	_, alice := e.get("/app?as=U1&c=C1")
	for _, want := range []string{"Hi <span class=\"mention mention-user\" title=\"U2\">@bob</span>, <b>pick</b> one", "Apple", "red or green", "1 reply", `data-ts="` + ts + `"`} {
		if !strings.Contains(alice, want) {
			t.Errorf("alice's page lacks %q", want)
		}
	}
	for _, unwanted := range []string{"only for bob", "a reply", "#private", "a DM for bob"} {
		if strings.Contains(alice, unwanted) {
			t.Errorf("alice's page shows %q", unwanted)
		}
	}
	_, bob := e.get("/app?as=U2&c=C1")
	if !strings.Contains(bob, "only for bob") || !strings.Contains(bob, "Only visible to you") || !strings.Contains(bob, "private") {
		t.Errorf("bob's page lacks his ephemeral message or private channel")
	}
	_, thread := e.get("/app?as=U1&c=C1&thread=" + ts)
	if !strings.Contains(thread, "a reply") {
		t.Error("the thread pane lacks the reply")
	}
	_, dm := e.get("/app?as=U2&c=" + slackfake.DMChannelID("U2"))
	if !strings.Contains(dm, "a DM for bob") {
		t.Error("bob's DM lacks the message")
	}
	// Someone else's DM or an unknown channel falls back to the default.
	_, other := e.get("/app?as=U1&c=" + slackfake.DMChannelID("U2"))
	if strings.Contains(other, "a DM for bob") || !strings.Contains(other, `data-channel="C1"`) {
		t.Error("alice sees bob's DM")
	}
}

func TestActSelectAndClick(t *testing.T) {
	e := startEnv(t)
	multi := slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic, txt("Choose"), "many",
		slack.NewOptionBlockObject("x", txt("X"), nil), slack.NewOptionBlockObject("y", txt("Y"), nil))
	btn := slack.NewButtonBlockElement("go", "v", txt("Go"))
	ts := e.post(slack.NewActionBlock("blk", multi, btn))

	r := e.act(map[string]any{"as": "U1", "kind": "select", "channel": "C1", "ts": ts, "blockId": "blk", "actionId": "many", "values": []string{"y", "x"}})
	if !r.OK {
		t.Fatalf("select: %+v", r)
	}
	cb := <-e.got
	if cb.User.ID != "U1" || len(cb.ActionCallback.BlockActions) != 1 || len(cb.ActionCallback.BlockActions[0].SelectedOptions) != 2 {
		t.Errorf("payload: %+v", cb.ActionCallback.BlockActions)
	}
	// The page shows alice's choice, not bob's.
	_, alice := e.get("/app?as=U1&c=C1")
	if strings.Count(alice, `class="chip"`) != 2 {
		t.Errorf("alice's chips: %d", strings.Count(alice, `class="chip"`))
	}
	_, bob := e.get("/app?as=U2&c=C1")
	if strings.Contains(bob, `class="chip"`) {
		t.Error("bob sees alice's selection")
	}

	if r := e.act(map[string]any{"as": "U2", "kind": "click", "channel": "C1", "ts": ts, "blockId": "blk", "actionId": "go"}); !r.OK {
		t.Fatalf("click: %+v", r)
	}
	if cb := <-e.got; cb.User.ID != "U2" || cb.ActionCallback.BlockActions[0].ActionID != "go" {
		t.Errorf("click payload: %+v", cb)
	}
	for _, bad := range []map[string]any{
		{"as": "U1", "kind": "click", "channel": "C1", "ts": ts, "blockId": "blk", "actionId": "nope"},
		{"as": "U9", "kind": "click", "channel": "C1", "ts": ts, "blockId": "blk", "actionId": "go"},
		{"as": "U1", "kind": "dance"},
	} {
		if r := e.act(bad); r.OK || r.Error == "" {
			t.Errorf("%v: %+v", bad, r)
		}
	}
}

func TestActModal(t *testing.T) {
	e := startEnv(t)
	ts := e.post(slack.NewActionBlock("blk", slack.NewButtonBlockElement("open", "", txt("Open"))))
	if r := e.act(map[string]any{"as": "U1", "kind": "click", "channel": "C1", "ts": ts, "blockId": "blk", "actionId": "open"}); !r.OK {
		t.Fatalf("click: %+v", r)
	}
	<-e.got
	var viewID string
	if err := e.fake.WaitFor(ctxT(t), func() bool {
		vs := e.fake.OpenViews("U1")
		if len(vs) == 1 {
			viewID = vs[0].ID
		}
		return viewID != ""
	}); err != nil {
		t.Fatal("no modal opened")
	}
	_, page := e.get("/app?as=U1&c=C1")
	if !strings.Contains(page, `data-view="`+viewID+`"`) || !strings.Contains(page, "Your answer") || !strings.Contains(page, ">Send<") {
		t.Fatalf("page lacks the modal:\n%s", page)
	}
	if _, bob := e.get("/app?as=U2&c=C1"); strings.Contains(bob, viewID) {
		t.Error("bob sees alice's modal")
	}

	submit := func(text string) actResponse {
		return e.act(map[string]any{"as": "U1", "kind": "submit", "viewId": viewID,
			"inputs": []map[string]string{{"blockId": "in", "actionId": "text", "value": text}}})
	}
	// Blank: the client refuses, nothing is sent.
	if r := submit(""); !r.OK || r.ViewErrors["in"] == "" {
		t.Fatalf("blank submit: %+v", r)
	}
	if _, page := e.get("/app?as=U1&c=C1"); !strings.Contains(page, "Please complete this required field.") {
		t.Error("the local error is not shown")
	}
	// The app refuses with response_action errors: shown under the input.
	if r := submit("bad"); !r.OK || r.ViewErrors["in"] != "Not <that> one" {
		t.Fatalf("refused submit: %+v", r)
	}
	<-e.got
	_, page = e.get("/app?as=U1&c=C1")
	if !strings.Contains(page, "Not &lt;that&gt; one") || strings.Contains(page, "required field") || !strings.Contains(page, ">bad</textarea>") && !strings.Contains(page, `value="bad"`) {
		t.Errorf("the app's error is not shown, or the typed text is lost:\n%s", page)
	}
	if r := submit("good"); !r.OK || r.ViewErrors != nil {
		t.Fatalf("good submit: %+v", r)
	}
	if cb := <-e.got; cb.View.State.Values["in"]["text"].Value != "good" {
		t.Errorf("submitted %+v", cb.View.State.Values)
	}
	if len(e.fake.OpenViews("U1")) != 0 {
		t.Error("the modal is still open")
	}
	if _, page := e.get("/app?as=U1&c=C1"); strings.Contains(page, viewID) {
		t.Error("the page still shows the modal")
	}
}

func TestEvents(t *testing.T) {
	e := startEnv(t)
	req, _ := http.NewRequestWithContext(ctxT(t), "GET", e.srv.URL+"/events", nil)
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	e.post(slack.NewDividerBlock())
	deadline := time.After(5 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stream ended")
			}
			if strings.HasPrefix(l, "data: ") && strings.Contains(l, `"type":"message_posted"`) && strings.Contains(l, `"channel":"C1"`) {
				// Close ends the stream.
				e.ui.Close()
				for range lines {
				}
				return
			}
		case <-deadline:
			t.Fatal("no message_posted event")
		}
	}
}

func TestGuards(t *testing.T) {
	e := startEnv(t)
	do := func(method, path, host, ctype, origin string) int {
		req, _ := http.NewRequest(method, e.srv.URL+path, strings.NewReader(`{"as":"U1","kind":"dance"}`))
		if host != "" {
			req.Host = host
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := e.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path, host, ctype, origin string
		want                              int
	}{
		{"GET", "/", "", "", "", 200},
		{"GET", "/", "localhost:8090", "", "", 200},
		{"GET", "/", "[::1]:8090", "", "", 200},
		{"GET", "/", "evil.example:8090", "", "", http.StatusMisdirectedRequest},
		{"POST", "/act", "", "text/plain", "", http.StatusUnsupportedMediaType},
		{"POST", "/act", "", "application/json", "http://evil.example", http.StatusForbidden},
		{"POST", "/act", "", "application/json", e.srv.URL, 200},
		{"GET", "/act", "", "", "", http.StatusMethodNotAllowed},
		{"GET", "/static/app.js", "", "", "", 200},
		{"GET", "/static/style.css", "", "", "", 200},
		{"GET", "/static/page.html", "", "", "", 404},
		{"GET", "/static/../server.go", "", "", "", 404},
		{"GET", "/nope", "", "", "", 404},
	} {
		if got := do(tc.method, tc.path, tc.host, tc.ctype, tc.origin); got != tc.want {
			t.Errorf("%s %s host=%q ctype=%q origin=%q: %d, want %d", tc.method, tc.path, tc.host, tc.ctype, tc.origin, got, tc.want)
		}
	}
	resp, err := e.http.Get(e.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
}

// TestScriptBuildsNoHTML keeps the page's script from ever parsing strings
// into markup on its own: only whole server-rendered regions are parsed.
func TestScriptBuildsNoHTML(t *testing.T) {
	js, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML =", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}

// TestBadgeSkipsChannelShown: the badge counts asks waiting in the other
// conversations; the one being viewed has its messages in view, so none.
func TestBadgeSkipsChannelShown(t *testing.T) {
	e := startEnv(t)
	e.post(slack.NewActionBlock("blk", slack.NewButtonBlockElement("go", "v", txt("Go"))))
	e.post(slack.NewActionBlock("blk", slack.NewButtonBlockElement("go", "v", txt("Go"))))
	if _, _, err := e.api.PostMessage("U1", slack.MsgOptionBlocks(slack.NewActionBlock("blk", slack.NewButtonBlockElement("go", "v", txt("Go"))))); err != nil {
		t.Fatal(err)
	}
	dm := slackfake.DMChannelID("U1")
	badges := func(c string) map[string]int {
		p := e.ui.build("U1", c, "")
		got := map[string]int{}
		for _, it := range append(p.Channels, p.DMs...) {
			got[it.ID] = it.Open
		}
		return got
	}
	if got := badges("C1"); got["C1"] != 0 || got[dm] != 1 {
		t.Errorf("viewing C1: badges %v, want C1 0 and the DM 1", got)
	}
	if got := badges(dm); got["C1"] != 2 || got[dm] != 0 {
		t.Errorf("viewing the DM: badges %v, want C1 2 and the DM 0", got)
	}
	if _, page := e.get("/app?as=U1&c=C1"); strings.Count(page, `class="badge"`) != 1 {
		t.Errorf("the page of C1 shows %d badges, want 1 (the DM's)", strings.Count(page, `class="badge"`))
	}
}
