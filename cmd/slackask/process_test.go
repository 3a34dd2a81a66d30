package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/httpapi/openapitest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// These tests run the real slackask binary as a separate process, kill it
// with SIGKILL mid-flow and start it again on the same database.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the slackask binary; skipped with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "slackask-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "slackask")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is one slackask serve process.
type proc struct {
	cmd  *exec.Cmd
	logs *syncBuffer
	base string
}

type procRig struct {
	t    *testing.T
	fake *slackfake.Server
	db   string
	addr string
	http *http.Client
	// serveEnv is added to the environment of slackask serve.
	serveEnv []string
}

func newProcRig(t *testing.T) *procRig {
	t.Helper()
	binary(t) // build first: skips with -short
	fake, err := slackfake.New(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	fake.AddUser(alice, "alice")
	fake.AddUser(bob, "bob")
	fake.AddChannel(channel, "asks")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// Every exchange with the API is checked against its OpenAPI document,
	// as the in-process harness's are.
	r := &procRig{t: t, fake: fake, db: filepath.Join(t.TempDir(), "slackask.db"), addr: addr,
		http: &http.Client{Transport: openapitest.Transport(t, &http.Transport{})}}
	t.Cleanup(func() {
		r.http.CloseIdleConnections()
		fake.Close()
	})
	return r
}

func (r *procRig) env(extra ...string) []string {
	env := append(os.Environ(),
		"SLACK_BOT_TOKEN=xoxb-fake", "SLACK_APP_TOKEN=xapp-fake", "SLACK_API_URL="+r.fake.APIURL(),
		"SLACKASK_CHANNEL="+channel, "SLACKASK_HTTP_ADDR="+r.addr, "SLACKASK_DATABASE="+r.db,
		"SLACKASK_LOG_LEVEL=debug", "SLACKASK_URL=http://"+r.addr)
	return append(env, extra...)
}

// serve starts slackask serve and waits until it is ready.
func (r *procRig) serve() *proc {
	r.t.Helper()
	p := &proc{logs: &syncBuffer{}, base: "http://" + r.addr}
	p.cmd = exec.Command(binary(r.t), "serve")
	p.cmd.Env = r.env(r.serveEnv...)
	p.cmd.Stderr = p.logs
	p.cmd.Stdout = p.logs
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if r.t.Failed() {
			r.t.Logf("slackask serve log:\n%s", p.logs.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := r.http.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return p
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	r.t.Fatalf("slackask serve never became ready:\n%s", p.logs.String())
	return nil
}

func (p *proc) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func (r *procRig) post(body any) (interaction.Ask, int) {
	r.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := r.http.Post("http://"+r.addr+"/v1/asks", "application/json", bytes.NewReader(b))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a interaction.Ask
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return a, resp.StatusCode
}

func (r *procRig) get(id string, wait time.Duration) interaction.Ask {
	r.t.Helper()
	resp, err := r.http.Get(fmt.Sprintf("http://%s/v1/asks/%s?wait=%s", r.addr, id, wait))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a interaction.Ask
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		r.t.Fatal(err)
	}
	return a
}

func (r *procRig) ctx() context.Context { return ctxT(r.t) }

func TestProcessKilledMidFlowLosesNothing(t *testing.T) {
	r := newProcRig(t)
	p1 := r.serve()
	in := ask1(question("db", "Which database?", "SQLite", "Postgres"), question("why", "Why?"), question("env", "Where?", "dev", "prod"))
	in.IdempotencyKey = "deploy-42"
	ask, code := r.post(in)
	if code != 201 {
		t.Fatalf("create: %d", code)
	}
	person := r.fake.Person(alice)
	ctx := r.ctx()
	if _, err := person.Select(ctx, channel, ask.TS, control(0, "select"), "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Click(ctx, channel, ask.TS, control(1, "other")); err != nil {
		t.Fatal(err)
	}
	view, err := person.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := person.Type(ctx, view.ID, slackfake.ByActionID("text"), "It has row-level locks"); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Submit(ctx, view.ID); err != nil { // acked: must survive
		t.Fatal(err)
	}
	// Wait until the acknowledged custom text shows (it is stored by then).
	if err := r.fake.WaitFor(ctx, func() bool {
		m, _ := r.fake.Message(channel, ask.TS)
		return strings.Contains(string(m.Blocks), "row-level locks")
	}); err != nil {
		t.Fatal("custom text never shown")
	}
	p1.kill9(t)

	r.serve()
	// A retried POST with the same key returns the same ask: no second message.
	again, code := r.post(in)
	if code != 200 && code != 201 || again.ID != ask.ID {
		t.Fatalf("retried POST: %d %+v", code, again)
	}
	if n := len(r.fake.Messages(channel)); n != 1 {
		t.Fatalf("%d messages after a retried POST, want 1", n)
	}
	// The original message still answers, the first time.
	if _, err := person.Select(ctx, channel, ask.TS, control(2, "select"), "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := person.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got := r.get(ask.ID, 10*time.Second)
	want := `{"answers":[{"id":"db","selected":["Postgres"]},{"id":"why","selected":[],"custom":"It has row-level locks"},{"id":"env","selected":["prod"]}]}`
	if mustJSON(t, got.Answer) != want {
		t.Fatalf("answer after kill -9\n got %s\nwant %s", mustJSON(t, got.Answer), want)
	}
}

func TestProcessDeadlinePassedWhileDown(t *testing.T) {
	r := newProcRig(t)
	p1 := r.serve()
	in := ask1(question("a", "Go?", "yes", "no"))
	in.Timeout = interaction.Duration(2 * time.Second)
	ask, _ := r.post(in)
	p1.kill9(t)
	time.Sleep(2500 * time.Millisecond)
	r.serve()
	got := r.get(ask.ID, 10*time.Second)
	if got.Status != interaction.StatusExpired || got.Error == nil || got.Error.Code != interaction.AskTimeout {
		t.Fatalf("after restart: %+v", got)
	}
	if err := r.fake.WaitFor(r.ctx(), func() bool {
		m, _ := r.fake.Message(channel, ask.TS)
		return strings.Contains(strings.ToLower(string(m.Blocks)), "expired") && !strings.Contains(string(m.Blocks), `"actions"`)
	}); err != nil {
		t.Fatal("the message of the expired ask was not updated after the restart")
	}
}

// askCmd runs `slackask ask` and returns its exit code, stdout and stderr.
type askRun struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
}

func (r *procRig) startAsk(args ...string) *askRun {
	r.t.Helper()
	a := &askRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	a.cmd = exec.Command(binary(r.t), append([]string{"ask"}, args...)...)
	a.cmd.Env = r.env()
	a.cmd.Stdout, a.cmd.Stderr = a.stdout, a.stderr
	if err := a.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = a.cmd.Process.Kill(); _, _ = a.cmd.Process.Wait() })
	return a
}

func (a *askRun) wait(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- a.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("slackask ask did not exit; stderr: %s", a.stderr.String())
	}
	return a.cmd.ProcessState.ExitCode()
}

// latestMessage waits for the n-th message in the channel.
func (r *procRig) nthMessage(n int) slackfake.Message {
	r.t.Helper()
	var msg slackfake.Message
	if err := r.fake.WaitFor(r.ctx(), func() bool {
		ms := r.fake.Messages(channel)
		if len(ms) >= n {
			msg = ms[n-1]
			return true
		}
		return false
	}); err != nil {
		r.t.Fatalf("message %d never posted", n)
	}
	return msg
}

func TestAskCommandSurvivesServerRestart(t *testing.T) {
	r := newProcRig(t)
	p1 := r.serve()
	a := r.startAsk("--question", "Deploy v2?", "--option", "Yes", "--option", "No", "--id", "deploy")
	msg := r.nthMessage(1)
	p1.kill9(t)
	time.Sleep(300 * time.Millisecond)
	r.serve()
	if _, err := r.fake.Person(alice).Select(r.ctx(), channel, msg.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	if code := a.wait(t); code != 0 {
		t.Fatalf("exit %d, stderr %s", code, a.stderr.String())
	}
	if got := strings.TrimSpace(a.stdout.String()); got != `{"answers":[{"id":"deploy","selected":["Yes"]}]}` {
		t.Fatalf("stdout %q", got)
	}
	if n := len(r.fake.Messages(channel)); n != 1 {
		t.Fatalf("%d messages: the CLI re-posted", n)
	}
	// It said where the question waits: the permalink Slack gave the
	// server, as the ask resource carries it.
	ask := r.get(blocks.MessageAskID(msg.Blocks), 0)
	if ask.Permalink == "" || !strings.Contains(a.stderr.String(), "waiting for an answer: "+ask.Permalink+"\n") {
		t.Fatalf("permalink %q; stderr %s", ask.Permalink, a.stderr.String())
	}
}

func TestAskCommandExitCodes(t *testing.T) {
	r := newProcRig(t)
	r.serve()
	t.Run("invalid", func(t *testing.T) {
		a := r.startAsk("--question", "Pick", "--option", "x", "--option", "x")
		if code := a.wait(t); code != 2 {
			t.Fatalf("exit %d, want 2; stderr %s", code, a.stderr.String())
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		a := r.startAsk("--question", "Go?", "--option", "yes", "--option", "no")
		msg := r.nthMessage(1)
		if _, err := r.fake.Person(alice).Click(r.ctx(), channel, msg.TS, control(-1, "cancel")); err != nil {
			t.Fatal(err)
		}
		if code := a.wait(t); code != 3 {
			t.Fatalf("exit %d, want 3; stderr %s", code, a.stderr.String())
		}
	})
	t.Run("timed out", func(t *testing.T) {
		a := r.startAsk("--question", "Quick?", "--timeout", "1s")
		if code := a.wait(t); code != 4 {
			t.Fatalf("exit %d, want 4; stderr %s", code, a.stderr.String())
		}
	})
	t.Run("ctrl-c withdraws", func(t *testing.T) {
		before := len(r.fake.Messages(channel))
		in := `{"questions":[{"id":"q","question":"Interrupt me?","options":[{"label":"a"}]}]}`
		a := r.startAskStdin(in, "--json", "-")
		msg := r.nthMessage(before + 1)
		_ = a.cmd.Process.Signal(os.Interrupt)
		if code := a.wait(t); code != 5 {
			t.Fatalf("exit %d, want 5; stderr %s", code, a.stderr.String())
		}
		if err := r.fake.WaitFor(r.ctx(), func() bool {
			m, _ := r.fake.Message(channel, msg.TS)
			return strings.Contains(string(m.Blocks), "ithdrawn")
		}); err != nil {
			t.Fatal("the withdrawn ask's message was not updated")
		}
	})
}

func (r *procRig) startAskStdin(stdin string, args ...string) *askRun {
	r.t.Helper()
	a := &askRun{stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	a.cmd = exec.Command(binary(r.t), append([]string{"ask"}, args...)...)
	a.cmd.Env = r.env()
	a.cmd.Stdin = bufio.NewReader(strings.NewReader(stdin))
	a.cmd.Stdout, a.cmd.Stderr = a.stdout, a.stderr
	if err := a.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = a.cmd.Process.Kill(); _, _ = a.cmd.Process.Wait() })
	return a
}

func TestProcessReminderSurvivesRestart(t *testing.T) {
	r := newProcRig(t)
	p1 := r.serve()
	in := ask1(question("a", "Go?", "yes", "no"))
	in.Responders = []string{alice}
	in.RemindAfter = interaction.Duration(2 * time.Second)
	ask, _ := r.post(in)
	p1.kill9(t) // the reminder is due while the service is down
	time.Sleep(2500 * time.Millisecond)
	r.serve()
	reminders := func() int {
		n := 0
		for _, m := range r.fake.Messages(channel) {
			if m.ThreadTS == ask.TS && strings.Contains(m.Text, "Reminder") && strings.Contains(m.Text, "<@"+alice+">") {
				n++
			}
		}
		return n
	}
	if err := r.fake.WaitFor(r.ctx(), func() bool { return reminders() == 1 }); err != nil {
		t.Fatal("no reminder in the thread after the restart")
	}
	time.Sleep(time.Second)
	if n := reminders(); n != 1 {
		t.Fatalf("%d reminders, want exactly 1", n)
	}
}
