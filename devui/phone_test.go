package devui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
)

const chromiumPath = "/usr/bin/chromium"

// phoneAsk is an ask as an agent writes one, with Markdown and long labels.
func phoneAsk() blocks.View {
	expires := time.Date(2026, 3, 14, 18, 0, 0, 0, time.UTC)
	return blocks.View{
		AskID: "a1B2c3", Rev: 1, Status: interaction.StatusPending, Responders: []string{"U1"}, ExpiresAt: &expires,
		Request: interaction.Request{
			Agent: &interaction.Agent{ID: "deploy-bot", Name: "Deploy *bot*"},
			Questions: []interaction.Question{
				{ID: "db", Header: "Database", Question: "Which **database** should the service use?\n\n- `PostgreSQL` is what we run elsewhere\n- [SQLite](https://sqlite.org) is one file",
					Options: []interaction.Option{
						{Label: "PostgreSQL with a connection pooler in front of it", Description: "what we run **everywhere else**, managed backups"},
						{Label: "SQLite", Description: "one file, no server"},
					}},
				{ID: "envs", Question: "Deploy to which environments?", MultiSelect: true,
					Options: []interaction.Option{{Label: "development"}, {Label: "staging-eu-west-1"}, {Label: "production-us-east-1"}}},
				{ID: "notes", Question: "Anything else I should know?"},
			},
		},
	}
}

// TestPhoneWidth draws an ask at a phone's width (390 px) in headless
// Chromium: nothing overflows the width, with a menu open too, and the
// sidebar is hidden until its toggle is pressed.
func TestPhoneWidth(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: %s is missing (apt-get install chromium)", chromiumPath)
	}
	e := startEnv(t)
	text, bs := blocks.Message(phoneAsk())
	if _, _, err := e.api.PostMessage("C1", slack.MsgOptionText(text, false), slack.MsgOptionBlocks(bs...)); err != nil {
		t.Fatal(err)
	}

	ph := newPhone(t)
	bctx, eval, waitJS, shot, checkFits := ph.ctx, ph.eval, ph.waitJS, ph.shot, ph.checkFits
	const overflow = phoneOverflow
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/?as=U1&c=C1"), chromedp.WaitVisible(chromedp.CSS("article.msg"))); err != nil {
		t.Fatal(err)
	}
	if !eval("viewport", `window.innerWidth === 390`) {
		w, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`window.innerWidth`))
		t.Fatalf("the viewport is %d px wide, not 390", w)
	}
	if eval("sidebar", `getComputedStyle(document.querySelector(".sidebar")).display !== "none"`) {
		t.Error("the sidebar shows at 390 px before it is asked for")
	}
	if !eval("messages", `document.querySelector(".channel").getBoundingClientRect().width >= 380`) {
		t.Error("the messages do not take the width")
	}
	checkFits("the ask")
	got, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("article.msg")))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Deploy ∗bot∗ (deploy-bot) has 3 questions", "Which database should", "• PostgreSQL is what we run elsewhere"} {
		if !strings.Contains(got, want) {
			t.Errorf("the message lacks %q:\n%s", want, got)
		}
	}

	// A menu open: its options wrap within the width.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(".select-btn"))); err != nil {
		t.Fatal(err)
	}
	waitJS("the menu", `document.querySelector(".menu:not([hidden])") !== null`)
	if !eval("menu", `document.querySelector(".menu:not([hidden])").getBoundingClientRect().right <= 390`) {
		got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](overflow))
		t.Errorf("the open menu overflows: %s", got)
	}
	checkFits("a menu open")
	shot("phone-menu")

	// The toggle shows the sidebar; choosing a conversation hides it again.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(".sidebar-toggle"))); err != nil {
		t.Fatal(err)
	}
	waitJS("the sidebar", `getComputedStyle(document.querySelector(".sidebar")).display !== "none"`)
	if !eval("sidebar width", `document.querySelector(".sidebar").getBoundingClientRect().right <= 390`) {
		t.Error("the open sidebar is wider than the screen")
	}
	checkFits("the sidebar open")
	shot("phone-sidebar")
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`.nav-item[data-channel="C1"]`))); err != nil {
		t.Fatal(err)
	}
	waitJS("the sidebar closes", `getComputedStyle(document.querySelector(".sidebar")).display === "none"`)
	shot("phone")
}

// phone is a headless Chromium at a phone's width (390 × 844 px), with
// the checks the phone tests make.
type phone struct {
	ctx       context.Context
	eval      func(what, expr string) bool
	waitJS    func(what, expr string)
	shot      func(name string)
	checkFits func(when string)
}

// phoneOverflow names the elements wider than the viewport, if any.
const phoneOverflow = `(() => {
		const w = document.documentElement.clientWidth;
		const bad = [];
		for (const el of document.querySelectorAll("#app *")) {
			const r = el.getBoundingClientRect();
			if (r.width > 0 && r.right > w + 0.5 && getComputedStyle(el).position !== "fixed" && !el.closest("[hidden], .sidebar")) bad.push(el.tagName + "." + el.className);
		}
		return JSON.stringify({scroll: document.documentElement.scrollWidth, width: w, bad: bad.slice(0, 5)});
	})()`

func newPhone(t *testing.T) phone {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(390, 844),
	)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	p := phone{ctx: bctx}
	p.eval = func(what, expr string) bool {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	p.waitJS = func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// shot saves a screenshot when SLACKASK_SCREENSHOTS names a directory.
	p.shot = func(name string) {
		t.Helper()
		dir := os.Getenv("SLACKASK_SCREENSHOTS")
		if dir == "" {
			return
		}
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		}
		if err != nil {
			t.Error(err)
		}
	}
	p.checkFits = func(when string) {
		t.Helper()
		if !p.eval(when, `document.documentElement.scrollWidth <= 390`) {
			got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](phoneOverflow))
			t.Errorf("%s: the page is wider than 390 px: %s", when, got)
		}
	}
	return p
}

// TestPhoneOneTap draws the one-tap controls at a phone's width: a team
// approval's buttons with their styles, the veto line and a confirmation
// dialog, checkboxes, and an 8-option menu on the last message, which
// opens above its button rather than under the message box, all options
// in view. Nothing overflows the width.
func TestPhoneOneTap(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: %s is missing (apt-get install chromium)", chromiumPath)
	}
	e := startEnv(t)
	post := func(v blocks.View) {
		t.Helper()
		text, bs := blocks.Message(v)
		if _, _, err := e.api.PostMessage("C1", slack.MsgOptionText(text, false), slack.MsgOptionBlocks(bs...)); err != nil {
			t.Fatal(err)
		}
	}
	post(blocks.View{AskID: "a1", Rev: 1, Responders: []string{"U1"}, Team: &blocks.Team{Wanted: 2},
		Request: interaction.Request{Questions: []interaction.Question{{ID: "deploy", Question: "Deploy v2.3 to production?",
			Options: []interaction.Option{
				{Label: "Approve", Style: interaction.StylePrimary, Confirm: &interaction.Confirm{}},
				{Label: "Reject", Veto: true, Note: interaction.NoteRequired},
			}}}}})
	post(blocks.View{AskID: "a2", Rev: 1, Request: interaction.Request{Questions: []interaction.Question{
		{ID: "envs", Question: "Deploy to which environments?", MultiSelect: true, Display: interaction.DisplayButtons,
			Options: []interaction.Option{{Label: "development"}, {Label: "staging-eu-west-1"}, {Label: "production-us-east-1"}}},
		{ID: "msg", Question: "Commit message?", Default: "fix(asks): the race in Wait when a ask ends while a waiter registers"},
	}}})
	var eight []interaction.Option
	for _, l := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"} {
		eight = append(eight, interaction.Option{Label: l})
	}
	post(blocks.View{AskID: "a3", Rev: 1, Request: interaction.Request{Questions: []interaction.Question{{ID: "pick", Question: "Which one?", Options: eight}}}})

	ph := newPhone(t)
	if err := chromedp.Do(ph.ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(e.srv.URL+"/?as=U1&c=C1"), chromedp.WaitVisible(chromedp.CSS("article.msg"))); err != nil {
		t.Fatal(err)
	}
	ph.checkFits("the one-tap asks")
	if !ph.eval("styles", `document.querySelector('button.btn.primary[data-action$=".0.select.1"]') !== null && document.querySelector('button.btn.danger[data-action$=".0.select.2"]') !== null`) {
		t.Error("the approval's buttons are not drawn primary and danger")
	}
	if !ph.eval("veto line", `document.body.innerText.includes("Reject ends the vote for everyone")`) {
		t.Error("the veto line is missing")
	}
	if !ph.eval("checkboxes", `document.querySelectorAll(".checks .check-opt").length === 3`) {
		t.Error("the checkboxes are not drawn")
	}
	if !ph.eval("default", `document.body.innerText.includes("Use as is") && document.body.innerText.includes("Edit…")`) {
		t.Error("the proposed default's buttons are missing")
	}
	ph.shot("phone-onetap")
	ph.eval("scroll to the approval", `(() => { document.querySelector("article.msg").scrollIntoView({block: "start"}); return true; })()`)
	ph.shot("phone-team-approval")

	// The confirmation dialog of Approve fits the screen; denying it closes it.
	if err := chromedp.Do(ph.ctx, chromedp.Click(chromedp.CSS(`button[data-action$=".0.select.1"]`)), chromedp.WaitVisible(chromedp.CSS(".confirm-overlay .confirm"))); err != nil {
		t.Fatal(err)
	}
	if !ph.eval("dialog", `document.querySelector(".confirm-overlay .confirm").getBoundingClientRect().right <= 390`) {
		t.Error("the confirmation dialog overflows")
	}
	ph.checkFits("the confirmation dialog")
	ph.shot("phone-confirm")
	if err := chromedp.Do(ph.ctx, chromedp.Click(chromedp.CSS(`.confirm-overlay [data-act=deny]`)), chromedp.WaitNotPresent(chromedp.CSS(".confirm-overlay"))); err != nil {
		t.Fatal(err)
	}

	// The menu of the last message opens clear of the message box, every
	// option in view without scrolling inside it.
	if err := chromedp.Do(ph.ctx, chromedp.Click(chromedp.CSS(`article.msg:last-of-type .select-btn`))); err != nil {
		t.Fatal(err)
	}
	ph.waitJS("the menu", `document.querySelector(".menu:not([hidden])") !== null`)
	if !ph.eval("menu placement", `(() => {
		const m = document.querySelector(".menu:not([hidden])").getBoundingClientRect();
		const box = document.querySelector(".composer").getBoundingClientRect();
		return m.top >= 0 && m.bottom <= box.top + 0.5 && m.right <= 390;
	})()`) {
		got, _ := chromedp.Run(ph.ctx, chromedp.Evaluate[string](`JSON.stringify({menu: document.querySelector(".menu:not([hidden])").getBoundingClientRect(), box: document.querySelector(".composer").getBoundingClientRect()})`))
		t.Errorf("the last message's menu is hidden under the message box or off screen: %s", got)
	}
	if !ph.eval("all options", `(() => { const m = document.querySelector(".menu:not([hidden])"); return m.scrollHeight <= m.clientHeight + 1 && m.querySelectorAll(".opt").length === 8; })()`) {
		got, _ := chromedp.Run(ph.ctx, chromedp.Evaluate[string](`(() => { const m = document.querySelector(".menu:not([hidden])"); return JSON.stringify({sh: m.scrollHeight, ch: m.clientHeight, cls: m.className, mh: m.style.maxHeight, btn: m.parentElement.getBoundingClientRect(), box: document.querySelector(".composer").getBoundingClientRect()}); })()`))
		t.Errorf("the menu does not show its 8 options without scrolling: %s", got)
	}
	ph.checkFits("the last menu open")
	ph.shot("phone-last-menu")
}
