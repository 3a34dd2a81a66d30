package slackfake

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

// askBlocks is a question like the ones slackask posts.
func askBlocks(t *testing.T) string {
	return mustMarshal(t, []any{
		with(section("*Which color?*"), "block_id", "q1", "accessory",
			with(staticSelect("ask1:color", option("red", "Red"), option("green", "Green"), option("blue", "Blue")), "initial_option", option("green", "Green"))),
		with(actions(
			obj{"type": "multi_static_select", "action_id": "ask1:tags", "placeholder": pt("Tags"),
				"options": []any{option("a", "A"), option("b", "B"), option("c", "C")}, "initial_options": []any{option("a", "A")}},
			button("ask1:other", "Other…"),
			with(button("ask1:skip", "Skip"), "value", "skip"),
			with(button("ask1:submit", "Submit"), "style", "primary", "value", "submit"),
			with(button("ask1:cancel", "Cancel"), "style", "danger", "confirm", confirmDialog()),
		), "block_id", "a1"),
	})
}

func postAsk(t *testing.T, srv *Server) string {
	t.Helper()
	_, body := rawCall(t, srv, "chat.postMessage", url.Values{"channel": {"C1"}, "text": {"Which color?"}, "blocks": {askBlocks(t)}})
	if body["ok"] != true {
		t.Fatalf("post: %v", body)
	}
	return body["ts"].(string)
}

func otherModal() slack.ModalViewRequest {
	return slack.ModalViewRequest{
		Type: slack.VTModal, Title: txt("Other answer"), Submit: txt("Send"), Close: txt("Cancel"),
		CallbackID: "other", PrivateMetadata: "ask1", NotifyOnClose: true,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock("other_b", txt("Your answer"), nil,
				slack.NewPlainTextInputBlockElement(txt("Type here"), "other_a")),
		}},
	}
}

// askBot behaves like slackask: "Other…" opens a modal after the ack.
func askBot(b *bot, req socketmode.Request, cb slack.InteractionCallback) {
	switch cb.Type {
	case slack.InteractionTypeBlockActions:
		b.ack(req, nil)
		if a := cb.ActionCallback.BlockActions; len(a) == 1 && a[0].ActionID == "ask1:other" {
			if _, err := b.api.OpenView(cb.TriggerID, otherModal()); err != nil {
				b.t.Errorf("views.open: %v", err)
			}
		}
	case slack.InteractionTypeViewSubmission:
		if cb.View.State.Values["other_b"]["other_a"].Value == "bad" {
			b.ack(req, slack.NewErrorsViewSubmissionResponse(map[string]string{"other_b": "Too bad"}))
			return
		}
		b.ack(req, nil)
	default:
		b.ack(req, nil)
	}
}

func TestPersonSelectAndClick(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, askBot)
	ts := postAsk(t, srv)
	alice := srv.Person("U1")
	ctx := testCtx(t)

	if _, err := alice.Select(ctx, "C1", ts, ByActionID("ask1:color"), "Blue"); err != nil {
		t.Fatal(err)
	}
	cb := b.next(t)
	if cb.Type != slack.InteractionTypeBlockActions || cb.User.ID != "U1" || cb.User.Name != "alice" || cb.Team.ID != "T0FAKE" ||
		cb.APIAppID != "A0FAKE" || cb.Container.Type != "message" || cb.Container.MessageTs != ts || cb.Container.ChannelID != "C1" ||
		cb.Channel.ID != "C1" || cb.Message.Timestamp != ts || cb.Message.Text != "Which color?" || cb.TriggerID == "" || cb.ResponseURL == "" {
		t.Fatalf("block_actions envelope fields: %+v", cb)
	}
	a := cb.ActionCallback.BlockActions[0]
	if a.ActionID != "ask1:color" || a.BlockID != "q1" || a.Type != "static_select" || a.SelectedOption.Value != "blue" || a.ActionTs == "" {
		t.Fatalf("action %+v", a)
	}
	st := cb.BlockActionState.Values
	if st["q1"]["ask1:color"].SelectedOption.Value != "blue" || len(st["a1"]["ask1:tags"].SelectedOptions) != 1 || st["a1"]["ask1:tags"].SelectedOptions[0].Value != "a" {
		t.Fatalf("state.values must hold the whole message state: %+v", st)
	}
	if len(cb.Message.Blocks.BlockSet) != 2 {
		t.Fatalf("message blocks not parsed: %+v", cb.Message.Blocks)
	}

	if _, err := alice.Select(ctx, "C1", ts, ByText("Tags"), "b", "C"); err != nil {
		t.Fatal(err)
	}
	cb = b.next(t)
	if got := cb.ActionCallback.BlockActions[0].SelectedOptions; len(got) != 2 || got[0].Value != "b" || got[1].Value != "c" {
		t.Fatalf("multi select action %+v", got)
	}
	if cb.BlockActionState.Values["q1"]["ask1:color"].SelectedOption.Value != "blue" {
		t.Fatal("earlier selection lost from state")
	}

	if _, err := alice.Click(ctx, "C1", ts, ByText("Cancel")); err != nil {
		t.Fatal(err)
	}
	cb = b.next(t)
	if a := cb.ActionCallback.BlockActions[0]; a.Type != "button" || a.ActionID != "ask1:cancel" || a.Text.Text != "Cancel" {
		t.Fatalf("button action %+v", a)
	}
	if c := alice.ConfirmsSeen(); len(c) != 1 || c[0].Title != "Sure?" || c[0].ActionID != "ask1:cancel" || c[0].TS != ts {
		t.Fatalf("confirms %+v", c)
	}
	if _, err := alice.Click(ctx, "C1", ts, ByActionID("ask1:skip")); err != nil {
		t.Fatal(err)
	}
	if a := b.next(t).ActionCallback.BlockActions[0]; a.Value != "skip" {
		t.Fatalf("button value %+v", a)
	}

	if _, err := alice.Clear(ctx, "C1", ts, ByActionID("ask1:color")); err != nil {
		t.Fatal(err)
	}
	if v := b.next(t).BlockActionState.Values["q1"]["ask1:color"]; v.SelectedOption.Value != "" {
		t.Fatalf("cleared select still has %+v", v.SelectedOption)
	}
}

func TestPersonErrors(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, askBot)
	ts := postAsk(t, srv)
	alice := srv.Person("U1")
	ctx := testCtx(t)
	checks := []struct {
		name string
		err  error
		want error
	}{
		{"ambiguous", second(alice.Click(ctx, "C1", ts, ByActionPrefix("ask1:"))), ErrAmbiguous},
		{"no match", second(alice.Click(ctx, "C1", ts, ByActionContains("nope"))), ErrNoMatch},
		{"two choices in static", second(alice.Select(ctx, "C1", ts, ByActionID("ask1:color"), "red", "blue")), ErrBadChoice},
		{"unknown choice", second(alice.Select(ctx, "C1", ts, ByActionID("ask1:color"), "purple")), ErrBadChoice},
		{"unknown message", second(alice.Click(ctx, "C1", "1.2", ByText("Skip"))), ErrNotFound},
		{"unknown user", second(srv.Person("U404").Click(ctx, "C1", ts, ByText("Skip"))), ErrUnknownUser},
		{"no view", alice.Type(ctx, "V404", nil, "x"), ErrNotFound},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	select {
	case cb := <-b.got:
		t.Fatalf("a failed action reached the bot: %+v", cb)
	default:
	}
}

func second[T any](_ T, err error) error { return err }

func TestPersonModal(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, askBot)
	ts := postAsk(t, srv)
	alice := srv.Person("U1")
	ctx := testCtx(t)

	if _, err := alice.Click(ctx, "C1", ts, ByText("Other…")); err != nil {
		t.Fatal(err)
	}
	b.next(t)
	view, err := alice.WaitView(ctx)
	if err != nil || view.CallbackID != "other" || !view.Open || view.User != "U1" || view.Title != "Other answer" {
		t.Fatalf("WaitView = %+v %v", view, err)
	}
	var verr *ViewErrors
	if _, err := alice.Submit(ctx, view.ID); !errors.As(err, &verr) || !verr.Local || verr.Errors["other_b"] == "" {
		t.Fatalf("empty required input: %v", err)
	}
	if err := alice.Type(ctx, view.ID, ByActionID("other_a"), "bad"); err != nil {
		t.Fatal(err)
	}
	_, err = alice.Submit(ctx, view.ID)
	if !errors.As(err, &verr) || verr.Local || verr.Errors["other_b"] != "Too bad" || len(verr.Unknown) != 0 {
		t.Fatalf("errors ack: %v", err)
	}
	cb := b.next(t)
	if cb.Type != slack.InteractionTypeViewSubmission || cb.View.ID != view.ID || cb.View.CallbackID != "other" ||
		cb.View.PrivateMetadata != "ask1" || cb.View.Hash == "" || cb.View.State.Values["other_b"]["other_a"].Value != "bad" ||
		cb.User.ID != "U1" || cb.TriggerID == "" || cb.APIAppID != "A0FAKE" {
		t.Fatalf("view_submission %+v", cb)
	}
	if v, _ := srv.View(view.ID); !v.Open || v.Errors["other_b"] != "Too bad" {
		t.Fatalf("view after errors: %+v", v)
	}
	if err := alice.Type(ctx, view.ID, nil, "purple"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	if b.next(t).View.State.Values["other_b"]["other_a"].Value != "purple" || len(srv.OpenViews("U1")) != 0 {
		t.Fatal("accepted submission must close the view")
	}

	if _, err := alice.Click(ctx, "C1", ts, ByText("Other…")); err != nil {
		t.Fatal(err)
	}
	b.next(t)
	view2, err := alice.WaitView(ctx)
	if err != nil || view2.ID == view.ID {
		t.Fatalf("second modal %+v %v", view2, err)
	}
	if _, err := alice.Close(ctx, view2.ID); err != nil {
		t.Fatal(err)
	}
	if cb := b.next(t); cb.Type != slack.InteractionTypeViewClosed || cb.View.ID != view2.ID || cb.IsCleared {
		t.Fatalf("view_closed %+v", cb)
	}
}

func TestSubmissionAckUpdateAndPush(t *testing.T) {
	srv := newServer(t, Config{})
	next := func(title string) *slack.ModalViewRequest {
		m := otherModal()
		m.Title = txt(title)
		return &m
	}
	startBot(t, srv, func(b *bot, req socketmode.Request, cb slack.InteractionCallback) {
		switch {
		case cb.Type == slack.InteractionTypeBlockActions:
			b.ack(req, nil)
			if _, err := b.api.OpenView(cb.TriggerID, otherModal()); err != nil {
				b.t.Errorf("views.open: %v", err)
			}
		case cb.View.State.Values["other_b"]["other_a"].Value == "update":
			b.ack(req, slack.NewUpdateViewSubmissionResponse(next("Updated")))
		case cb.View.State.Values["other_b"]["other_a"].Value == "push":
			b.ack(req, slack.NewPushViewSubmissionResponse(next("Pushed")))
		default:
			b.ack(req, slack.NewClearViewSubmissionResponse())
		}
	})
	ts := postAsk(t, srv)
	alice := srv.Person("U1")
	ctx := testCtx(t)
	if _, err := alice.Click(ctx, "C1", ts, ByText("Skip")); err != nil {
		t.Fatal(err)
	}
	v, err := alice.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	submit := func(text string) View {
		t.Helper()
		if err := alice.Type(ctx, v.ID, nil, text); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.Submit(ctx, v.ID); err != nil {
			t.Fatal(err)
		}
		w, err := alice.WaitView(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	upd := submit("update")
	if upd.ID != v.ID || upd.Title != "Updated" || upd.Updates != 1 || upd.Hash == v.Hash {
		t.Fatalf("updated view %+v", upd)
	}
	if upd.State == nil || !strings.Contains(string(upd.State), `"value":"update"`) {
		t.Fatalf("input kept across update of an unchanged block_id: %s", upd.State)
	}
	pushed := submit("push")
	if pushed.Title != "Pushed" || pushed.PreviousViewID != v.ID || pushed.RootViewID != v.ID || len(srv.OpenViews("U1")) != 2 {
		t.Fatalf("pushed %+v", pushed)
	}
	if err := alice.Type(ctx, pushed.ID, nil, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Submit(ctx, pushed.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.OpenViews("U1")); n != 0 {
		t.Fatalf("clear left %d views open", n)
	}
}

func TestClientStateFollowsBlockIDs(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, nil)
	sel := func(id string, initial string) obj {
		return with(staticSelect(id, option("x", "X"), option("y", "Y"), option("z", "Z")), "initial_option", option(initial, map[string]string{"x": "X", "z": "Z"}[initial]))
	}
	v1 := []any{
		with(section("keep"), "block_id", "keep", "accessory", sel("c1", "x")),
		with(actions(sel("c2", "x")), "block_id", "v1"),
		with(section("no id"), "accessory", sel("c3", "x")),
	}
	_, body := rawCall(t, srv, "chat.postMessage", url.Values{"channel": {"C1"}, "text": {"t"}, "blocks": {mustMarshal(t, v1)}})
	ts := body["ts"].(string)
	alice, bob := srv.Person("U1"), srv.Person("U2")
	ctx := testCtx(t)
	for _, id := range []string{"c1", "c2", "c3"} {
		if _, err := alice.Select(ctx, "C1", ts, ByActionID(id), "y"); err != nil {
			t.Fatal(err)
		}
		b.next(t)
	}
	v2 := []any{
		with(section("keep"), "block_id", "keep", "accessory", sel("c1", "z")),
		with(actions(sel("c2", "z"), button("go", "Go")), "block_id", "v2"),
		with(section("no id"), "accessory", sel("c3", "z")),
	}
	_, body = rawCall(t, srv, "chat.update", url.Values{"channel": {"C1"}, "ts": {ts}, "text": {"t"}, "blocks": {mustMarshal(t, v2)}})
	if body["ok"] != true {
		t.Fatalf("update %v", body)
	}
	if _, err := alice.Click(ctx, "C1", ts, ByText("Go")); err != nil {
		t.Fatal(err)
	}
	st := b.next(t).BlockActionState.Values
	if st["keep"]["c1"].SelectedOption.Value != "y" {
		t.Errorf("unchanged block_id must keep the person's choice: %+v", st["keep"])
	}
	if st["v2"]["c2"].SelectedOption.Value != "z" || st["v1"] != nil {
		t.Errorf("new block_id must start from initial_option: %+v", st)
	}
	for bid, acts := range st {
		if a, ok := acts["c3"]; ok && a.SelectedOption.Value != "z" {
			t.Errorf("block without block_id (%s) gets a new generated id, so it resets: %+v", bid, a)
		}
	}
	if _, err := bob.Click(ctx, "C1", ts, ByText("Go")); err != nil {
		t.Fatal(err)
	}
	if v := b.next(t).BlockActionState.Values["keep"]["c1"].SelectedOption.Value; v != "z" {
		t.Errorf("another person's state is their own: %q", v)
	}
}

func TestTriggers(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{Now: clock.Now})
	b := startBot(t, srv, nil)
	ts := postAsk(t, srv)
	alice := srv.Person("U1")
	ctx := testCtx(t)
	click := func() string {
		if _, err := alice.Click(ctx, "C1", ts, ByText("Skip")); err != nil {
			t.Fatal(err)
		}
		return b.next(t).TriggerID
	}
	trig := click()
	resp, err := b.api.OpenView(trig, otherModal())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.api.OpenView(trig, otherModal()); err == nil || err.Error() != "exchanged_trigger_id" {
		t.Fatalf("reused trigger: %v", err)
	}
	if _, err := b.api.UpdateView(otherModal(), "", "stale-hash", resp.ID); err == nil || err.Error() != "hash_conflict" {
		t.Fatalf("stale hash: %v", err)
	}
	upd, err := b.api.UpdateView(otherModal(), "", resp.Hash, resp.ID)
	if err != nil || upd.Hash == resp.Hash {
		t.Fatalf("update with the current hash: %v", err)
	}
	pushed, err := b.api.PushView(click(), otherModal())
	if err != nil || pushed.PreviousViewID != resp.ID {
		t.Fatalf("views.push: %+v %v", pushed, err)
	}
	late := click()
	clock.Advance(3*time.Second + time.Millisecond)
	if _, err := b.api.OpenView(late, otherModal()); err == nil || err.Error() != "expired_trigger_id" {
		t.Fatalf("expired trigger: %v", err)
	}
	_, err = b.api.OpenView("123.456.nope", otherModal())
	var se slack.SlackErrorResponse
	if !errors.As(err, &se) || se.Err != "invalid_arguments" {
		t.Fatalf("unknown trigger: %v", err)
	}
	bad := otherModal()
	bad.Title = txt("A title far longer than twenty-four")
	_, err = b.api.OpenView(click(), bad)
	if !errors.As(err, &se) || se.Err != "invalid_arguments" || len(se.ResponseMetadata.Messages) == 0 {
		t.Fatalf("invalid view: %v", err)
	}
}

func TestRawAndResponseURL(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, nil)
	ack, err := srv.Person("U2").Raw(testCtx(t), map[string]any{"type": "block_actions", "actions": []any{}})
	if err != nil || ack != nil {
		t.Fatalf("raw: %s %v", ack, err)
	}
	if cb := b.next(t); cb.User.ID != "U2" {
		t.Fatalf("raw payload user %+v", cb.User)
	}
	ts := postAsk(t, srv)
	if _, err := srv.Person("U1").Click(testCtx(t), "C1", ts, ByText("Skip")); err != nil {
		t.Fatal(err)
	}
	cb := b.next(t)
	status, body := rawPost(t, cb.ResponseURL, "application/json", `{"replace_original":true,"text":"Answered: skip"}`)
	if status != 200 || body["ok"] != true {
		t.Fatalf("response_url: %d %v", status, body)
	}
	if m, _ := srv.Message("C1", ts); m.Text != "Answered: skip" || string(m.Blocks) != "[]" {
		t.Fatalf("replaced message %+v", m)
	}
	rawPost(t, cb.ResponseURL, "application/json", `{"text":"just for you"}`)
	if e := srv.Ephemerals("U1"); len(e) != 1 || e[0].Text != "just for you" {
		t.Fatalf("ephemeral via response_url %+v", e)
	}
}

func TestWaitForContext(t *testing.T) {
	srv := newServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.WaitFor(ctx, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor: %v", err)
	}
}

func TestSelectInView(t *testing.T) {
	srv := newServer(t, Config{})
	view := with(modal(
		with(actions(staticSelect("pick", option("a", "A"), option("b", "B")), button("more", "More")), "block_id", "acts"),
		obj{"type": "input", "block_id": "in", "label": pt("L"), "element": staticSelect("insel", option("x", "X"), option("y", "Y"))},
	), "callback_id", "cv")
	b := startBot(t, srv, func(b *bot, req socketmode.Request, cb slack.InteractionCallback) {
		b.ack(req, nil)
		if cb.Type == slack.InteractionTypeBlockActions && cb.Container.Type == "message" {
			_, body := rawCall(t, srv, "views.open", url.Values{"trigger_id": {cb.TriggerID}, "view": {mustMarshal(t, view)}})
			if body["ok"] != true {
				b.t.Errorf("views.open: %v", body)
			}
		}
	})
	ts := postAsk(t, srv)
	alice := srv.Person("U1")
	ctx := testCtx(t)
	if _, err := alice.Click(ctx, "C1", ts, And(ByBlockID("a1"), ByText("Skip"))); err != nil {
		t.Fatal(err)
	}
	b.next(t)
	v, err := alice.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := alice.SelectInView(ctx, v.ID, ByActionID("insel"), "Y"); err != nil || ack != nil {
		t.Fatalf("select in an input block: %s %v", ack, err)
	}
	if _, err := alice.SelectInView(ctx, v.ID, ByActionID("pick"), "b"); err != nil {
		t.Fatal(err)
	}
	cb := b.next(t)
	if cb.Container.Type != "view" || cb.Container.ViewID != v.ID || cb.View.CallbackID != "cv" ||
		cb.BlockActionState.Values["in"]["insel"].SelectedOption.Value != "y" {
		t.Fatalf("block_actions in a view: %+v / %+v", cb.Container, cb.BlockActionState)
	}
	if _, err := alice.ClickInView(ctx, v.ID, ByText("More")); err != nil {
		t.Fatal(err)
	}
	if a := b.next(t).ActionCallback.BlockActions[0]; a.ActionID != "more" {
		t.Fatalf("button in view %+v", a)
	}
	if _, err := alice.Submit(ctx, v.ID); err != nil {
		t.Fatal(err)
	}
	if sub := b.next(t); sub.View.State.Values["in"]["insel"].SelectedOption.Value != "y" || sub.View.State.Values["acts"]["pick"].SelectedOption.Value != "b" {
		t.Fatalf("submission state %+v", sub.View.State.Values)
	}
}

// A frozen message keeps its old controls for the person until thawed,
// while everyone else sees the update.
func TestPersonFreeze(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, askBot)
	ts := postAsk(t, srv)
	alice, bob := srv.Person("U1"), srv.Person("U2")
	ctx := testCtx(t)
	if _, err := alice.Freeze("C1", "9.9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("freeze of a missing message: %v", err)
	}
	thaw, err := alice.Freeze("C1", ts)
	if err != nil {
		t.Fatal(err)
	}
	_, body := rawCall(t, srv, "chat.update", url.Values{"channel": {"C1"}, "ts": {ts}, "text": {"Ended"}, "blocks": {`[]`}})
	if body["ok"] != true {
		t.Fatalf("update: %v", body)
	}
	if _, err := bob.Click(ctx, "C1", ts, ByActionID("ask1:skip")); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("bob clicked a control the update removed: %v", err)
	}
	if _, err := alice.Click(ctx, "C1", ts, ByActionID("ask1:skip")); err != nil {
		t.Fatalf("frozen click: %v", err)
	}
	if cb := b.next(t); cb.ActionCallback.BlockActions[0].ActionID != "ask1:skip" || cb.Container.MessageTs != ts {
		t.Fatalf("frozen click payload: %+v", cb)
	}
	thaw()
	if _, err := alice.Click(ctx, "C1", ts, ByActionID("ask1:skip")); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("thawed click: %v", err)
	}
}
