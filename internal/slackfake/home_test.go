package slackfake

import (
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

func homeView(text string) slack.HomeTabViewRequest {
	return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
		slack.NewSectionBlock(md(text), nil, slack.NewAccessory(slack.NewButtonBlockElement("go", "1", slack.NewTextBlockObject(slack.PlainTextType, "Go", false, false)))),
	}}}
}

// views.publish keeps each person's Home tab, checks it as Slack does and
// holds the workspace to Tier 4 (100 a minute, bursts of 20).
func TestViewsPublish(t *testing.T) {
	clock := newClock()
	srv := newServer(t, Config{Now: clock.Now})
	api := newAPI(t, srv)
	ctx := testCtx(t)
	v, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: homeView("first")})
	if err != nil || v.Type != slack.VTHomeTab || v.ID == "" {
		t.Fatalf("publish: %+v %v", v, err)
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: homeView("second"), Hash: &v.Hash}); err != nil {
		t.Fatal(err)
	}
	h, ok := srv.Home("U1")
	if !ok || h.ID != v.ID || !strings.Contains(string(h.Blocks), "second") || h.Updates != 1 {
		t.Fatalf("home %+v %v", h, ok)
	}
	if _, ok := srv.Home("U2"); ok {
		t.Fatal("U2 has a Home tab nobody published")
	}
	stale := v.Hash
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: homeView("third"), Hash: &stale}); err == nil || err.Error() != "hash_conflict" {
		t.Fatalf("stale hash: %v", err)
	}
	bad := homeView("x")
	bad.Type = slack.VTModal
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: bad}); err == nil || !strings.Contains(err.Error(), "invalid_arguments") {
		t.Fatalf("a modal published: %v", err)
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U9", View: homeView("x")}); err == nil || err.Error() != "user_not_found" {
		t.Fatalf("unknown user: %v", err)
	}
	// Tier 4: the burst left (20 minus the 2 published above; refused calls spend none), then 429.
	n := callsBefore429(t, 100, func() error {
		_, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U2", View: homeView("burst")})
		return err
	})
	if n != tierBurst-2 {
		t.Fatalf("%d calls before the 429, want %d", n, tierBurst-2)
	}
	clock.Advance(600 * time.Millisecond) // one token at 100 a minute
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U2", View: homeView("later")}); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
}
