package devui

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

// The sidebar has a Home entry; the Home page shows the person's published
// Home tab, opening it tells the app (app_home_opened), and its buttons act
// from the Home view.
func TestHomePage(t *testing.T) {
	e := startEnv(t)
	_, page := e.get("/app?as=U1&c=C1")
	if !strings.Contains(page, `data-channel="home"`) {
		t.Fatal("no Home entry in the sidebar")
	}
	if _, empty := e.get("/app?as=U1&c=home"); !strings.Contains(empty, "No Home tab yet") {
		t.Fatal("the Home page before any publish")
	}
	if r := e.act(map[string]any{"as": "U1", "kind": "open-home"}); !r.OK {
		t.Fatalf("open-home: %+v", r)
	}
	if u := <-e.homes; u != "U1" {
		t.Fatalf("app_home_opened for %q", u)
	}
	home := slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewSectionBlock(txt("Waiting on you"), nil, slack.NewAccessory(slack.NewButtonBlockElement("answer", "", txt("Answer"))), slack.SectionBlockOptionBlockID("w1")),
	}}}
	v, err := e.api.PublishViewContext(ctxT(t), slack.PublishViewContextRequest{UserID: "U1", View: home})
	if err != nil {
		t.Fatal(err)
	}
	_, page = e.get("/app?as=U1&c=home")
	if !strings.Contains(page, `data-view="`+v.ID+`"`) || !strings.Contains(page, "Waiting on you") || !strings.Contains(page, `data-action="answer"`) {
		t.Fatalf("the Home page: %s", page)
	}
	if _, bobs := e.get("/app?as=U2&c=home"); strings.Contains(bobs, "Waiting on you") {
		t.Fatal("bob sees alice's Home")
	}
	if r := e.act(map[string]any{"as": "U1", "kind": "click", "viewId": v.ID, "blockId": "w1", "actionId": "answer"}); !r.OK {
		t.Fatalf("click in Home: %+v", r)
	}
	cb := <-e.got
	if cb.View.ID != v.ID || cb.View.Type != slack.VTHomeTab || cb.ActionCallback.BlockActions[0].ActionID != "answer" {
		t.Fatalf("payload %+v", cb)
	}
}

// The hand-off modal's user picker is drawn as a menu of the workspace's
// people, with the person's pick.
func TestUsersSelect(t *testing.T) {
	n := Names{Users: map[string]string{"U1": "alice", "U2": "bob <b>"}}
	raw := []byte(`[{"type":"input","block_id":"handoff","label":{"type":"plain_text","text":"To"},"element":{"type":"users_select","action_id":"to","placeholder":{"type":"plain_text","text":"Choose"}}}]`)
	st := State{"handoff": {"to": {Type: "users_select", SelectedUser: new("U2")}}}
	bs, err := n.Blocks(raw, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	el := bs[0].Element
	if el == nil || el.Kind != "select" || len(el.Options) != 2 || len(el.Selected) != 1 || el.Selected[0].Value != "U2" || !strings.Contains(string(el.Selected[0].Text), "&lt;b&gt;") {
		t.Fatalf("element %+v", el)
	}
}
