package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// mcpReach is an SDK client session on a real server, over one transport:
// "http" is serve's /mcp in-process, "stdio" a `slackask mcp` process
// forwarding to a `slackask serve` process.
type mcpReach struct {
	cs   *mcpsdk.ClientSession
	fake *slackfake.Server
	logs *syncBuffer // the MCP server's log
	// wait long-polls the ask through the HTTP API until it ends.
	wait func(id string) interaction.Ask
	// command, stdio only, is another `slackask mcp` for the same server.
	command func() *exec.Cmd
}

func connectMCP(t *testing.T, transport string) *mcpReach {
	t.Helper()
	cl := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "e2e-reach", Version: "v0"}, nil)
	switch transport {
	case "http":
		h := start(t)
		cs, err := cl.Connect(ctxT(t), &mcpsdk.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: h.http}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return &mcpReach{cs: cs, fake: h.fake, logs: h.logs, wait: h.waitAsk}
	case "stdio":
		r := newProcRig(t)
		r.serve()
		logs := &syncBuffer{}
		cmd := exec.Command(binary(t), "mcp")
		cmd.Env = r.env()
		cmd.Stderr = logs
		cs, err := cl.Connect(r.ctx(), &mcpsdk.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cs.Close()
			if t.Failed() {
				t.Logf("slackask mcp log:\n%s", logs.String())
			}
		})
		return &mcpReach{cs: cs, fake: r.fake, logs: logs, wait: func(id string) interaction.Ask {
			t.Helper()
			a := r.get(id, 15*time.Second)
			if !a.Status.Ended() {
				t.Fatalf("ask %s still pending after the wait", id)
			}
			return a
		}, command: func() *exec.Cmd {
			cmd := exec.Command(binary(t), "mcp")
			cmd.Env = r.env()
			return cmd
		}}
	}
	t.Fatalf("unknown transport %q", transport)
	return nil
}

// newAsk waits for the n-th message in the channel and returns its ask id.
func (m *mcpReach) newAsk(t *testing.T, n int) string {
	t.Helper()
	var id string
	if err := m.fake.WaitFor(ctxT(t), func() bool {
		ms := m.fake.Messages(channel)
		if len(ms) >= n {
			id = blocks.MessageAskID(ms[n-1].Blocks)
		}
		return id != ""
	}); err != nil {
		t.Fatalf("message %d never came", n)
	}
	return id
}

// waitLog waits until the MCP server's log holds want n times.
func (m *mcpReach) waitLog(t *testing.T, want string, n int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("the MCP server logged %q %d times", want, n), 15*time.Second, func() bool {
		return strings.Count(m.logs.String(), want) >= n
	})
}

func (m *mcpReach) call(t *testing.T, ctx context.Context, tool string, args map[string]any) (*mcpsdk.CallToolResult, error) {
	t.Helper()
	return m.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
}

// TestMCPCutCallAnsweredLater: the go-sdk client cuts its ask_user_question
// call after 2 s, as an agent host does; the question stays open in Slack,
// get_answer says it is pending, the person answers, and get_answer returns
// the answer. A deliberate cancel of the next call withdraws its question,
// and over stdio so does the client exiting.
func TestMCPCutCallAnsweredLater(t *testing.T) {
	for _, tr := range []string{"http", "stdio"} {
		t.Run(tr, func(t *testing.T) {
			m := connectMCP(t, tr)
			cut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if res, err := m.call(t, cut, "ask_user_question", mcpArgs); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the cut call: %+v %v, want a deadline", res, err)
			}
			id := m.newAsk(t, 1)
			// The server has decided what the cut means once it logs it.
			m.waitLog(t, "mcp ask left open", 1)

			res, err := m.call(t, ctxT(t), "get_answer", map[string]any{"id": id, "waitSeconds": 0})
			if err != nil {
				t.Fatal(err)
			}
			if text := res.Content[0].(*mcpsdk.TextContent).Text; res.IsError || !strings.HasPrefix(text, "Still waiting") || !strings.Contains(text, id) {
				t.Fatalf("get_answer before the answer: %q (error %v)", text, res.IsError)
			}
			later := make(chan *mcpsdk.CallToolResult, 1)
			go func() {
				res, err := m.call(t, ctxT(t), "get_answer", map[string]any{"id": id})
				if err != nil {
					t.Error(err)
				}
				later <- res
			}()
			answerNewest(t, m.fake)
			if res := <-later; res != nil {
				checkToolResult(t, res)
			}

			// A deliberate cancel withdraws the question.
			stop, stopNow := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := m.call(t, stop, "ask_user_question", mcpArgs)
				done <- err
			}()
			id2 := m.newAsk(t, 2)
			stopNow()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("the cancelled call: %v", err)
			}
			if a := m.wait(id2); a.Status != interaction.StatusAborted {
				t.Fatalf("after a deliberate cancel the ask is %s, want aborted", a.Status)
			}
			if tr != "stdio" {
				return
			}
			// The stdio client exiting withdraws its call's question. The
			// SDK's ClientSession.Close waits for the calls in flight, so
			// this client speaks JSON-RPC itself and exits as a host
			// process does: its end of the pipe closes.
			cmd := m.command()
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait only after stdout is drained: it closes the pipe.
			exited := make(chan error, 1)
			go func() {
				_, _ = io.Copy(io.Discard, stdout)
				exited <- cmd.Wait()
			}()
			args, _ := json.Marshal(mcpArgs)
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_user_question","arguments":` + string(args) + `}}`,
			} {
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			id3 := m.newAsk(t, 3)
			stdin.Close()
			if a := m.wait(id3); a.Status != interaction.StatusAborted {
				t.Fatalf("after the client exited the ask is %s, want aborted", a.Status)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("slackask mcp: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("slackask mcp did not exit when its client did")
				_ = cmd.Process.Kill()
				<-exited
			}
		})
	}
}
