package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/journal"
)

const chromiumPath = "/usr/bin/chromium"

// devRun is a `slackask dev` running in the test.
type devRun struct {
	devStatus
	logs   *syncBuffer
	stdout *syncBuffer
	http   *http.Client
	stop   func() // ends the run and waits for it; idempotent
}

// startDev runs runDev on random loopback ports with a fresh database.
func startDev(t *testing.T) *devRun {
	t.Helper()
	return startDevDB(t, filepath.Join(t.TempDir(), "dev.db"), false)
}

// startDevDB runs runDev on random loopback ports with the database db,
// kept as it is unless reset (as the default database is).
func startDevDB(t *testing.T, db string, reset bool) *devRun {
	t.Helper()
	return startDevWith(t, db, reset, nil)
}

// startDevWith is startDevDB with the config changed by mut (nil: none)
// as devConfig would change it.
func startDevWith(t *testing.T, db string, reset bool, mut func(*config.Config)) *devRun {
	t.Helper()
	devLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{
		SlackBotToken: devBotToken, SlackAppToken: devAppToken, Channel: devChannel,
		HTTPAddr: apiLn.Addr().String(), DevAddr: devLn.Addr().String(),
		Database: db, LogLevel: "debug", LogFormat: "json", Retention: time.Hour,
	}
	if mut != nil {
		mut(&cfg)
	}
	d := &devRun{logs: &syncBuffer{}, stdout: &syncBuffer{}, http: &http.Client{Transport: &http.Transport{}}}
	log := zerolog.New(d.logs).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	started := make(chan devStatus, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- runDev(ctx, cfg, log, &devHooks{
			stdout: d.stdout, devListener: devLn, apiListener: apiLn, resetDB: reset,
			started: func(s devStatus) { started <- s },
		})
	}()
	var once sync.Once
	d.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("runDev: %v", err)
			}
			d.http.CloseIdleConnections()
			if t.Failed() {
				t.Logf("dev log:\n%s", d.logs.String())
			}
		})
	}
	t.Cleanup(d.stop)
	select {
	case d.devStatus = <-started:
	case err := <-done:
		t.Fatalf("runDev ended early: %v\n%s", err, d.logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("dev never started")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := d.http.Get(d.APIURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("service never became ready\n%s", d.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return d
}

// ask posts an ask with ?wait and delivers the final resource.
func (d *devRun) ask(t *testing.T, body string) <-chan interaction.Ask {
	t.Helper()
	out := make(chan interaction.Ask, 1)
	go func() {
		defer close(out)
		resp, err := d.http.Post(d.APIURL+"/v1/asks?wait=50s", "application/json", strings.NewReader(body))
		if err != nil {
			t.Errorf("POST /v1/asks: %v", err)
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var a interaction.Ask
		if resp.StatusCode != 201 || json.Unmarshal(raw, &a) != nil {
			t.Errorf("POST /v1/asks: %d %s", resp.StatusCode, raw)
			return
		}
		out <- a
	}()
	return out
}

func TestDevConfig(t *testing.T) {
	for _, k := range []string{"SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_API_URL", "SLACKASK_CHANNEL", "SLACKASK_DATABASE", "SLACKASK_LOG_FORMAT", "SLACKASK_RESPONDERS"} {
		t.Setenv(k, "")
	}
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-real-one")
	t.Setenv("SLACKASK_TIMEOUT", "5m")
	cfg, reset, err := devConfig("", false)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SlackBotToken != devBotToken || cfg.SlackAppToken != devAppToken {
		t.Errorf("tokens not the emulator's: %s", cfg)
	}
	if cfg.Channel != devChannel || cfg.Database != devDatabase || !reset || cfg.LogFormat != "console" || cfg.Timeout != 5*time.Minute {
		t.Errorf("defaults: %s reset=%v", cfg, reset)
	}
	t.Setenv("SLACKASK_DATABASE", "mine.db")
	t.Setenv("SLACKASK_CHANNEL", "C0OTHER")
	t.Setenv("SLACKASK_LOG_FORMAT", "json")
	cfg, reset, err = devConfig("", false)
	if err != nil || cfg.Database != "mine.db" || reset || cfg.Channel != "C0OTHER" || cfg.LogFormat != "json" {
		t.Errorf("honoured settings: %s reset=%v err=%v", cfg, reset, err)
	}
	t.Setenv("SLACKASK_RESPONDERS", "not-an-id")
	if _, _, err := devConfig("", false); err == nil || !strings.Contains(err.Error(), "SLACKASK_RESPONDERS") {
		t.Errorf("bad responders accepted: %v", err)
	}
	for addr, want := range map[string]string{"0.0.0.0:8090": "http://127.0.0.1:8090", "[::]:8090": "http://[::1]:8090", "127.0.0.1:1": "http://127.0.0.1:1"} {
		a, _ := net.ResolveTCPAddr("tcp", addr)
		if got := browsable(a); got != want {
			t.Errorf("browsable(%s) = %s, want %s", addr, got, want)
		}
	}
	var stderr bytes.Buffer
	if code := cmdDev(context.Background(), []string{"extra"}, io.Discard, &stderr); code != 2 {
		t.Errorf("cmdDev with arguments: exit %d", code)
	}
}

// TestDevCommand runs `slackask dev` as a user does and pastes the curl
// command it prints (as an HTTP request).
func TestDevCommand(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"SLACKASK_HTTP_ADDR": "127.0.0.1:0", "SLACKASK_DEV_ADDR": "127.0.0.1:0", "SLACKASK_DATABASE": filepath.Join(dir, "dev.db"),
		"SLACKASK_CHANNEL": "", "SLACKASK_RESPONDERS": "", "SLACKASK_API_TOKEN": "", "SLACKASK_LOG_LEVEL": "warn",
	} {
		t.Setenv(k, v)
	}
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- cmdDev(ctx, nil, stdout, stderr) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d\n%s", code, stderr.String())
		}
	}()
	var banner string
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(banner, "Ctrl-C"); banner = stdout.String() {
		if time.Now().After(deadline) {
			t.Fatalf("no banner; stdout %q stderr %s", banner, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	page := regexp.MustCompile(`Open  (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(banner)
	api := regexp.MustCompile(`API   (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(banner)
	curl := regexp.MustCompile(`curl -s '([^']+)' -H 'Content-Type: application/json' -d '([^']+)'`).FindStringSubmatch(banner)
	if page == nil || api == nil || curl == nil {
		t.Fatalf("banner lacks the page, the API or the curl command:\n%s", banner)
	}
	if !strings.HasPrefix(curl[1], api[1]+"/v1/asks?wait=") {
		t.Errorf("curl URL %s is not the API's", curl[1])
	}
	if !strings.Contains(banner, "export SLACKASK_URL="+api[1]+"\n") {
		t.Errorf("banner lacks the SLACKASK_URL line for slackask ask and mcp:\n%s", banner)
	}
	httpc := &http.Client{Transport: &http.Transport{}}
	defer httpc.CloseIdleConnections()
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := httpc.Get(api[1] + "/readyz")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
	}
	// The printed request, without waiting.
	resp, err := httpc.Post(api[1]+"/v1/asks", "application/json", strings.NewReader(curl[2]))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("the printed ask: %d %s", resp.StatusCode, raw)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r, err := httpc.Get(page[1] + "/app")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if strings.Contains(string(body), "Which database should the service use?") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed the ask:\n%s", body)
		}
	}
}

// TestDevBrowser answers asks in headless Chromium: selects, a modal with
// a validation error, a non-responder's refusal, a confirm dialog.
func TestDevBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skipf("skipping the browser test: %s is missing (apt-get install chromium)", chromiumPath)
	}
	shots := os.Getenv("SLACKASK_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	d := startDev(t)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var chromeOut syncBuffer
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860),
		chromedp.CombinedOutput(&chromeOut),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	defer func() {
		if t.Failed() {
			t.Logf("chromium output:\n%.4000s", chromeOut.String())
		}
	}()
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	waitJS := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(15*time.Second), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("app").outerHTML`))
			t.Fatalf("%s: %v\npage:\n%.6000s", what, err, html)
		}
	}
	shot := func(name string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond) // let the flash of a live update fade a little
		png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(shots, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}
	asUser := func(id string) {
		t.Helper()
		run("pick "+id, chromedp.SetValue(chromedp.ID("as"), id))
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("as").dispatchEvent(new Event("change", {bubbles: true}))`)); err != nil {
			t.Fatal(err)
		}
		waitJS("acting as "+id, fmt.Sprintf(`document.querySelector("[data-region=sidebar]").dataset.query.includes("as=%s")`, id))
	}

	run("open the page", chromedp.Navigate(d.PageURL), chromedp.WaitVisible(chromedp.CSS("h1")))
	waitJS("the event stream", `document.querySelector(".dot.on") !== null`)
	waitJS("the empty channel", `document.querySelector("#curl") !== null`)
	shot("0-empty")
	answered := d.ask(t, `{"agent":{"id":"deploy-bot","name":"Deploy bot"},
		"questions":[
		 {"id":"db","header":"Database","question":"Which database should the service use?","options":[{"label":"PostgreSQL","description":"what we run elsewhere"},{"label":"SQLite","description":"one file, no server"}]},
		 {"id":"envs","question":"Deploy to which environments?","multiSelect":true,"options":[{"label":"dev"},{"label":"staging"},{"label":"prod"}]},
		 {"id":"notes","question":"Anything else I should know? (<script>alert(1)</script> stays text)"}],
		"responders":["U0DEV","S0REVIEW"]}`)

	// The ask appears live, without a reload.
	waitJS("the ask on the page", `document.querySelectorAll("article.msg.open").length === 1`)
	msg := `article.msg.open`
	text, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(msg)))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Deploy bot (deploy-bot) has 3 questions", "Who may answer: @dev, @reviewers", "<script>alert(1)</script> stays text", "Submit", "Cancel"} {
		if !strings.Contains(text, want) {
			t.Errorf("the message lacks %q:\n%s", want, text)
		}
	}
	if n, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#messages script").length`)); n != 0 {
		t.Errorf("%d script elements inside the messages", n)
	}
	shot("1-ask")

	// bob may not answer: his press gets the ephemeral refusal, for him only.
	asUser(devBob)
	run("bob presses Skip", chromedp.Click(chromedp.CSS(msg+` button[data-action$=".0.skip"]`)))
	waitJS("bob's refusal", `[...document.querySelectorAll("article.msg.ephemeral")].some(m => m.textContent.includes("can't answer"))`)
	eph, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("article.msg.ephemeral")))
	if !strings.Contains(eph, "Only visible to you") || !strings.Contains(eph, "Only @dev, @reviewers may answer") {
		t.Errorf("refusal: %q", eph)
	}
	shot("2-refusal-for-bob")
	asUser(devYou)
	waitJS("no refusal for dev", `document.querySelector("article.msg.ephemeral") === null`)

	// dev picks SQLite in the select …
	sel0 := msg + ` .select[data-action$=".0.select"]`
	run("open the first menu", chromedp.Click(chromedp.CSS(sel0+" .select-btn")), chromedp.WaitVisible(chromedp.CSS(sel0+" .menu")))
	run("choose SQLite", chromedp.Click(chromedp.CSS(sel0+` .opt[data-value="1"]`)))
	waitJS("SQLite chosen", fmt.Sprintf(`(document.querySelector(%q + " .choice") || {}).textContent === "SQLite"`, sel0))
	// bob, chosen in the sidebar's People list, sees the same ask without
	// dev's pick (each person's client keeps its own); dev's is there again
	// when dev acts.
	asPerson := func(id string) {
		t.Helper()
		run("act as "+id+" from the People list", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a[data-act=as-link][data-as=%q]`, id))))
		waitJS("acting as "+id, fmt.Sprintf(`document.querySelector("[data-region=sidebar]").dataset.query.includes("as=%s")`, id))
	}
	asPerson(devBob)
	waitJS("bob sees no pick of dev's", fmt.Sprintf(`document.querySelector(%q) !== null && (document.querySelector(%q + " .choice") || {}).textContent !== "SQLite"`, sel0, sel0))
	shot("3a-bob-sees-his-own-picks")
	asPerson(devYou)
	waitJS("dev's pick again", fmt.Sprintf(`(document.querySelector(%q + " .choice") || {}).textContent === "SQLite"`, sel0))
	// … dev and prod in the multi-select, whose menu stays open …
	sel1 := msg + ` .select[data-action$=".1.select"]`
	run("open the second menu", chromedp.Click(chromedp.CSS(sel1+" .select-btn")), chromedp.WaitVisible(chromedp.CSS(sel1+" .menu")))
	run("choose dev", chromedp.Click(chromedp.CSS(sel1+` .opt[data-value="0"]`)))
	waitJS("dev chosen", fmt.Sprintf(`document.querySelectorAll(%q + " .chip").length === 1`, sel1))
	run("choose prod", chromedp.Click(chromedp.CSS(sel1+` .opt[data-value="2"]`)))
	waitJS("prod chosen", fmt.Sprintf(`[...document.querySelectorAll(%q + " .chip")].map(c => c.dataset.value).join() === "0,2"`, sel1))
	shot("3-menu-open")
	run("close the menu", chromedp.Click(chromedp.CSS(".channel-head")))

	// … and answers the free-text question in the modal: blank first (the
	// app's validation error shows under the input), then for real.
	run("press Answer…", chromedp.Click(chromedp.CSS(msg+` button[data-action$=".2.other"]`)))
	run("the modal", chromedp.WaitVisible(chromedp.CSS("form.modal textarea")))
	run("type blanks", chromedp.SendKeys(chromedp.CSS("form.modal textarea"), "   "), chromedp.Click(chromedp.CSS(`form.modal button[type=submit]`)))
	waitJS("the app's error under the input", `(document.querySelector("form.modal .field-error") || {}).textContent !== undefined`)
	ferr, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("form.modal .field-error")))
	shot("4-modal-error")
	const custom = "Ship it on Friday & tell #ops <3"
	// Clear the field as a person does (select all, delete), then type.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => { const t = document.querySelector("form.modal textarea"); t.focus(); t.select(); return true })()`)); err != nil {
		t.Fatal(err)
	}
	run("type the answer",
		chromedp.KeyEvent("\b"),
		chromedp.SendKeys(chromedp.CSS("form.modal textarea"), custom),
		chromedp.Click(chromedp.CSS(`form.modal button[type=submit]`)))
	waitJS("the modal closed", `document.querySelector("form.modal") === null`)
	waitJS("the answer on the message", fmt.Sprintf(`document.querySelector(%q).textContent.includes(%q)`, msg, "Other: "+custom))

	run("press Submit", chromedp.Click(chromedp.CSS(msg+` button[data-action$=".-1.submit"]`)))
	var ask interaction.Ask
	select {
	case a, ok := <-answered:
		if !ok {
			t.FailNow()
		}
		ask = a
	case <-time.After(20 * time.Second):
		shot("failed")
		html, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("app").outerHTML`))
		t.Fatalf("the waiting HTTP call got no answer; page:\n%.8000s", html)
	}
	want := `{"answers":[{"id":"db","selected":["SQLite"]},{"id":"envs","selected":["dev","prod"]},{"id":"notes","selected":[],"custom":"` + custom + `"}]}`
	if ask.Status != interaction.StatusAnswered || mustJSONNoEscape(t, ask.Answer) != want {
		t.Fatalf("answer %s (%s), want %s", mustJSONNoEscape(t, ask.Answer), ask.Status, want)
	}
	if ask.AnsweredBy == nil || ask.AnsweredBy.ID != devYou {
		t.Errorf("answered by %+v", ask.AnsweredBy)
	}
	if !strings.Contains(ferr, "answer") {
		t.Errorf("the modal's error %q", ferr)
	}
	waitJS("the message ended", fmt.Sprintf(`(() => { const m = document.querySelector('article[data-ts=%q]'); return m && !m.querySelector(".b-actions") && m.textContent.includes("Answered by @dev") })()`, ask.TS))
	endText, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`article[data-ts=%q]`, ask.TS))))
	for _, want := range []string{"Answer: SQLite", "dev", "prod", "Answer: " + custom, "(edited)"} {
		if !strings.Contains(endText, want) {
			t.Errorf("the ended message lacks %q:\n%s", want, endText)
		}
	}
	shot("5-answered")

	// Cancel asks for confirmation first; "Keep it" keeps the ask.
	cancelled := d.ask(t, `{"questions":[{"id":"go","question":"Go ahead?","options":[{"label":"Yes"},{"label":"No"}]}]}`)
	waitJS("the second ask", `document.querySelectorAll("article.msg.open").length === 1`)
	cancelBtn := `article.msg.open button[data-action$=".-1.cancel"]`
	run("press Cancel", chromedp.Click(chromedp.CSS(cancelBtn)), chromedp.WaitVisible(chromedp.CSS(".confirm-overlay .confirm")))
	dialog, _ := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(".confirm-overlay")))
	if !strings.Contains(dialog, "Cancel this question?") || !strings.Contains(dialog, "Keep it") {
		t.Errorf("confirm dialog: %q", dialog)
	}
	shot("6-confirm")
	run("keep it", chromedp.Click(chromedp.CSS(`.confirm-overlay [data-act=deny]`)), chromedp.WaitNotPresent(chromedp.CSS(".confirm-overlay")))
	time.Sleep(200 * time.Millisecond)
	if msgs := d.Fake.Messages(devChannel); len(msgs) != 2 || msgs[1].Updates != 0 {
		t.Fatalf("denying the confirm changed the ask: %+v", msgs)
	}
	run("cancel for real", chromedp.Click(chromedp.CSS(cancelBtn)), chromedp.WaitVisible(chromedp.CSS(".confirm-overlay .confirm")),
		chromedp.Click(chromedp.CSS(`.confirm-overlay [data-act=confirm]`)))
	select {
	case a := <-cancelled:
		if a.Status != interaction.StatusCancelled || a.Error == nil || a.Error.Code != interaction.AskCancelled {
			t.Errorf("cancelled ask: %+v", a)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled ask never returned")
	}
	waitJS("no open asks left", `document.querySelectorAll("article.msg.open").length === 0`)

	// One tap with a reason: Hold asks "Why?" in a modal, whose note
	// comes back with the answer.
	held := d.ask(t, `{"questions":[{"id":"ship","question":"Ship it?","options":[{"label":"Ship","style":"primary","confirm":true},{"label":"Hold","note":"required"}]}]}`)
	waitJS("the one-tap ask", `document.querySelectorAll("article.msg.open button.btn.primary[data-action$='.0.select.1']").length === 1`)
	run("tap Hold", chromedp.Click(chromedp.CSS(`article.msg.open button[data-action$=".0.select.2"]`)), chromedp.WaitVisible(chromedp.CSS("form.modal textarea")))
	shot("6b-why")
	run("say why", chromedp.SendKeys(chromedp.CSS("form.modal textarea"), "tests are red"), chromedp.Click(chromedp.CSS(`form.modal button[type=submit]`)))
	select {
	case a := <-held:
		if mustJSONNoEscape(t, a.Answer) != `{"answers":[{"id":"ship","selected":["Hold"],"note":"tests are red"}]}` {
			t.Errorf("held ask: %s", mustJSONNoEscape(t, a.Answer))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the held ask never returned")
	}

	// An ask in the thread of the first one: a reply count on the message,
	// the ask itself in the thread pane.
	resp, err := d.http.Post(d.APIURL+"/v1/asks", "application/json", strings.NewReader(
		`{"threadTs":"`+ask.TS+`","questions":[{"id":"more","question":"One more thing: *ship* on `+"`main`"+`?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("thread ask: %d", resp.StatusCode)
	}
	run("open the thread", chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`article[data-ts=%q] a.replies`, ask.TS))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`article[data-ts=%q] a.replies`, ask.TS))),
		chromedp.WaitVisible(chromedp.CSS(`.thread article.msg.open button[data-action*=".0.select."]`))) // Yes/No: buttons
	shot("7-thread")

	if err := chromedp.Cancel(bctx); err != nil {
		t.Logf("closing chromium: %v", err)
	}
}

func mustJSONNoEscape(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// TestDevEndsOrphans: asks a dev run left pending, in a database kept
// between runs, are ended when the next run starts: its emulator is empty,
// so nobody could answer them.
func TestDevEndsOrphans(t *testing.T) {
	db := filepath.Join(t.TempDir(), "dev.db")
	first := startDevDB(t, db, false)
	resp, err := first.http.Post(first.APIURL+"/v1/asks", "application/json",
		strings.NewReader(`{"questions":[{"id":"a","question":"Still there?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var old interaction.Ask
	_ = json.NewDecoder(resp.Body).Decode(&old)
	resp.Body.Close()
	if resp.StatusCode != 201 || old.ID == "" {
		t.Fatalf("create: %d %+v", resp.StatusCode, old)
	}
	first.stop()

	second := startDevDB(t, db, false) // returns once the banner is out: orphans are ended by then
	get := func(id string) interaction.Ask {
		t.Helper()
		resp, err := second.http.Get(second.APIURL + "/v1/asks/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var a interaction.Ask
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	if a := get(old.ID); a.Status != interaction.StatusAborted {
		t.Fatalf("the earlier run's ask is %s, want aborted", a.Status)
	}
	if !strings.Contains(second.logs.String(), "ended the asks an earlier dev run left pending") {
		t.Errorf("the log does not say the asks were ended")
	}
}

// A dev run that starts afresh removes the journal of acked clicks with
// the database: its entries belong to asks that are gone.
func TestDevResetRemovesTheJournal(t *testing.T) {
	db := filepath.Join(t.TempDir(), "dev.db")
	j, _, err := journal.Open(db + journalSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Append([]byte(`{"envelope_id":"stale","type":"interactive","payload":{"type":"block_actions"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	d := startDevDB(t, db, true)
	d.stop()
	if fi, err := os.Stat(db + journalSuffix); err != nil || fi.Size() != 0 {
		t.Fatalf("the journal after a fresh start: %v, %v; want an empty file", fi, err)
	}
}

// TestDevHTTPMode: `slackask dev --mode http` wires the emulator to the
// service in Slack's HTTP mode: the events URL is verified, and a click
// reaches the service as a signed POST and answers the ask, with no Socket
// Mode connection at all.
func TestDevHTTPMode(t *testing.T) {
	t.Setenv("SLACKASK_DATABASE", filepath.Join(t.TempDir(), "dev.db"))
	cfg, _, err := devConfig(config.SlackModeHTTP, false)
	if err != nil || !cfg.HTTPMode() || cfg.SlackSigningSecret == "" || cfg.SlackAppToken != "" {
		t.Fatalf("devConfig(http): mode %q, a secret %v, app token %q, %v", cfg.SlackMode, cfg.SlackSigningSecret != "", cfg.SlackAppToken, err)
	}
	if _, _, err := devConfig("carrier-pigeon", false); err == nil || !strings.Contains(err.Error(), "SLACKASK_SLACK_MODE") {
		t.Fatalf("devConfig(unknown mode) = %v", err)
	}
	d := startDevWith(t, filepath.Join(t.TempDir(), "dev.db"), true, func(c *config.Config) {
		c.SlackMode, c.SlackSigningSecret, c.SlackAppToken = cfg.SlackMode, cfg.SlackSigningSecret, ""
	})
	if !strings.Contains(d.stdout.String(), "HTTP mode") {
		t.Errorf("the banner does not say HTTP mode:\n%s", d.stdout.String())
	}
	resp, err := d.http.Post(d.APIURL+"/v1/asks", "application/json",
		strings.NewReader(`{"questions":[{"id":"a","question":"Ship?","options":[{"label":"Yes"},{"label":"No"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var a interaction.Ask
	_ = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	ctx := ctxT(t)
	if _, err := d.Fake.Person(devYou).Select(ctx, a.Channel, a.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	resp, err = d.http.Get(d.APIURL + "/v1/asks/" + a.ID + "?wait=10s")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if a.Status != interaction.StatusAnswered {
		t.Fatalf("the ask is %s after the click", a.Status)
	}
	if n := d.Fake.Connections(); n != 0 {
		t.Errorf("%d Socket Mode connections in HTTP mode", n)
	}
	logs := d.logs.String()
	if !strings.Contains(logs, `"path":"/slack/interactivity","status":200`) || !strings.Contains(logs, `"path":"/slack/events","status":200`) {
		t.Errorf("the click and the url_verification did not come over HTTP:\n%s", logs)
	}
}

// TestDevAddsPeopleAnAskNames: in dev, a user id an ask names that the
// emulator does not know becomes a person of it, so the README's team
// example (U01ALICE, U02BOB, U03CAROL) can be answered; the start-up log
// names the SLACKASK_URL in use (issue 29 items 1 and 15).
func TestDevAddsPeopleAnAskNames(t *testing.T) {
	d := startDev(t)
	if !strings.Contains(d.logs.String(), `"SLACKASK_URL":"`+d.APIURL+`"`) {
		t.Errorf("the start-up log does not name the SLACKASK_URL in use (%s):\n%s", d.APIURL, d.logs.String())
	}
	got := d.ask(t, `{"questions":[{"id":"deploy","question":"Deploy v1.4.2?","required":true,"allowOther":false,`+
		`"options":[{"label":"Yes"},{"label":"No","veto":true}]}],"responses":2,"responders":["U01ALICE","U02BOB","U03CAROL"]}`)
	var ask interaction.Ask
	deadline := time.Now().Add(10 * time.Second)
	for {
		if msgs := d.Fake.Messages(devChannel); len(msgs) > 0 {
			ask.TS = msgs[len(msgs)-1].TS
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ask was never posted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	names := map[string]string{}
	for _, u := range d.Fake.Users() {
		names[u.ID] = u.Name
	}
	if names["U01ALICE"] != "alice (U01ALICE)" || names["U02BOB"] != "bob (U02BOB)" || names["U03CAROL"] != "carol" || names[devAlice] != "alice" {
		t.Fatalf("people: %v", names)
	}
	ctx := ctxT(t)
	for _, who := range []string{"U01ALICE", "U03CAROL"} {
		p := d.Fake.Person(who)
		// One question of buttons on a team ask: the tap is the response.
		if _, err := p.Select(ctx, devChannel, ask.TS, control(0, "select"), "Yes"); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case a := <-got:
		if a.Status != interaction.StatusAnswered || len(a.Responses) != 2 || a.Responses[0].User.ID != "U01ALICE" {
			t.Fatalf("ask %+v", a)
		}
		// The permalink opens the emulator's page at the message,
		// highlighted (issue 29 item 11).
		want := d.PageURL + "/?c=" + devChannel + "&msg=" + a.TS
		if a.Permalink != want {
			t.Fatalf("permalink %q, want %q", a.Permalink, want)
		}
		resp, err := d.http.Get(a.Permalink)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		re := regexp.MustCompile(`<article class="msg[^"]* highlight"[^>]*data-ts="` + regexp.QuoteMeta(a.TS) + `"`)
		if resp.StatusCode != 200 || !re.Match(page) || strings.Count(string(page), " highlight\"") != 1 {
			t.Fatalf("the permalink's page does not highlight the message (%d):\n%.3000s", resp.StatusCode, page)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the team ask was never answered")
	}
}

// TestDevOAuth: `slackask dev --oauth` starts with no installation; the
// install link goes through the emulator's authorize page and back, and
// then an ask is posted and answered with the installation's token.
func TestDevOAuth(t *testing.T) {
	t.Setenv("SLACKASK_DATABASE", filepath.Join(t.TempDir(), "dev.db"))
	t.Setenv("SLACKASK_ENCRYPTION_KEY", "")
	cfg, _, err := devConfig("", true)
	if err != nil || !cfg.HTTPMode() || !cfg.OAuth() || cfg.SlackBotToken != "" || cfg.EncryptionKey == "" {
		t.Fatalf("devConfig(oauth): mode %q, oauth %v, bot token %q, key set %v, %v", cfg.SlackMode, cfg.OAuth(), cfg.SlackBotToken, cfg.EncryptionKey != "", err)
	}
	if _, _, err := devConfig(config.SlackModeSocket, true); err == nil || !strings.Contains(err.Error(), "--oauth") {
		t.Fatalf("devConfig(socket, oauth) = %v", err)
	}
	d := startDevWith(t, filepath.Join(t.TempDir(), "dev.db"), true, func(c *config.Config) {
		c.SlackMode, c.SlackSigningSecret, c.SlackAppToken, c.SlackBotToken = cfg.SlackMode, cfg.SlackSigningSecret, "", ""
		c.SlackClientID, c.SlackClientSecret, c.EncryptionKey = cfg.SlackClientID, cfg.SlackClientSecret, cfg.EncryptionKey
		c.PublicURL, c.SlackAuthorizeURL = cfg.PublicURL, cfg.SlackAuthorizeURL
	})
	if out := d.stdout.String(); !strings.Contains(out, d.APIURL+"/slack/install") || !strings.Contains(out, `{"workspace":"`+devTeam+`","agent":`) {
		t.Errorf("the banner does not give the install link, or its curl names no workspace:\n%s", out)
	}
	body := `{"workspace":"` + devTeam + `","questions":[{"id":"a","question":"Ship?","options":[{"label":"Yes"},{"label":"No"}]}]}`
	resp, err := d.http.Post(d.APIURL+"/v1/asks", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an ask before any install: %d, want 400", resp.StatusCode)
	}
	// A browser: cookies kept, redirects followed (to the emulator's
	// authorize page and back).
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: &http.Transport{}}
	defer browser.CloseIdleConnections()
	resp, err = browser.Get(d.APIURL + "/slack/install")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), "slackask keys create --name NAME --workspace "+devTeam) {
		t.Fatalf("after the install link: %d\n%s", resp.StatusCode, page)
	}
	resp, err = d.http.Post(d.APIURL+"/v1/asks", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var a interaction.Ask
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &a) != nil {
		t.Fatalf("an ask after the install: %d %s", resp.StatusCode, raw)
	}
	if _, err := d.Fake.Person(devYou).Select(ctxT(t), a.Channel, a.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	resp, err = d.http.Get(d.APIURL + "/v1/asks/" + a.ID + "?wait=10s")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&a)
	resp.Body.Close()
	if a.Status != interaction.StatusAnswered {
		t.Fatalf("the ask is %s after the click", a.Status)
	}
	for _, c := range d.Fake.Calls() {
		if c.Method == "chat.postMessage" && c.Error != "" {
			t.Errorf("chat.postMessage failed: %s", c.Error)
		}
	}
}
