package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

const (
	// minRetryBackoff and maxRetryBackoff pace the retries of a failed Wait.
	minRetryBackoff = 250 * time.Millisecond
	maxRetryBackoff = 10 * time.Second
	// waitRetryFor is how long Wait may keep failing before the call gives up.
	waitRetryFor = 2 * time.Minute
	// maxKept is how many asks left open per session get_answer finds
	// without an id, and maxKeptSessions how many sessions are remembered
	// (the oldest is forgotten first).
	maxKept         = 32
	maxKeptSessions = 1000
)

// askTool is the handler of ask_user_question and get_answer.
type askTool struct {
	svc            interaction.AskService
	log            zerolog.Logger
	interval       time.Duration   // progress notifications; <= 0: none
	defaultChannel string          // used when a call names no channel and no user
	base           context.Context // nil, or ends every call in flight when done
	calls          *httpCalls      // served by Handler: ends calls nobody listens to
	cancels        *cancels        // reasons of notifications/cancelled, by call
	waitRetryFor   time.Duration   // tests: 0 means waitRetryFor

	mu       sync.Mutex
	kept     map[string][]string // session id → asks left open by a call that ended, oldest first
	sessions []string            // the keys of kept, oldest first
}

// callContext returns the context of a call: it ends when the client
// cancels the call or its session ends, when the server's life does, or
// (HTTP) when the call's POST ends or its session is deleted, with a cause
// that says which.
func (t *askTool) callContext(ctx context.Context, req *mcpsdk.CallToolRequest) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	var undo []func() bool
	if t.base != nil {
		undo = append(undo, context.AfterFunc(t.base, func() { cancel(errShutdown) }))
	}
	var untrack func()
	if t.calls != nil {
		untrack = t.calls.track(req, cancel)
		// The call acts as the API key its POST was authorized with.
		ctx = interaction.WithCaller(ctx, t.calls.caller(req))
	}
	return ctx, func() {
		for _, u := range undo {
			u()
		}
		if untrack != nil {
			untrack()
		}
		cancel(nil)
	}
}

func (t *askTool) handle(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	ctx, done := t.callContext(ctx, req)
	defer done()
	key, tagged := keyOf(req)
	if tagged && t.cancels != nil {
		defer t.cancels.forget(key)
	}

	in, waitFor, err := decodeInput(req.Params.Arguments, t.defaultChannel)
	if err != nil {
		return errorResult(err), nil
	}
	if in.Agent == nil {
		in.Agent = agentOf(req.ClientInfo())
	}
	if err := interaction.CheckInput(t.svc, in); err != nil {
		return errorResult(err), nil
	}

	log := t.log
	stop := func() {}
	ask, err := interaction.AskAndWait(ctx, t.svc, in, interaction.AwaitOptions{
		WaitRetry: interaction.Retry{For: t.retryFor(), Backoff: &backoff.Backoff{Min: minRetryBackoff, Max: maxRetryBackoff}},
		Retryable: func(err error) bool { return interaction.ErrorCode(err) != interaction.NotFound },
		WaitFor:   waitFor,
		Abandoned: func() (bool, string) { return t.abandoned(ctx, key, tagged, log), "" },
		OnCreated: func(a interaction.Ask) {
			log = t.log.With().Str("ask", a.ID).Logger()
			log.Info().Str("channel", a.Channel).Int("questions", len(a.Questions)).
				Str("agent", agentName(a.Agent)).Msg("mcp ask created")
			stop = t.sendProgress(ctx, req, a, log)
		},
		OnRetry: func(_ string, err error, pause time.Duration) {
			log.Warn().Err(err).Dur("retry_in", pause).Msg("mcp ask: waiting failed, retrying")
		},
	})
	stop()
	switch {
	case err != nil && ask.ID == "":
		log.Warn().Err(err).Str("code", string(interaction.ErrorCode(err))).Msg("mcp ask not created")
		return errorResult(err), nil
	case err != nil:
		log.Warn().Err(err).Msg("mcp ask: waiting failed")
		return errorResult(err), nil
	case !ask.Status.Ended():
		t.keep(sessionOf(req), ask.ID)
		log.Info().Dur("waitFor", waitFor).AnErr("reason", context.Cause(ctx)).Msg("mcp ask left open: the call stopped waiting")
		return pendingResult(ask), nil
	}
	log.Info().Str("status", string(ask.Status)).Msg("mcp ask ended")
	return endedResult(ask)
}

// abandoned decides, once a call's context has ended with its ask pending,
// whether the client meant to stop (withdraw the ask) or gave up waiting
// (keep it open for get_answer):
//
//   - the server shutting down or the client deleting its HTTP session or
//     closing its stdio session: withdraw;
//   - notifications/cancelled whose reason speaks of a timeout: keep; with
//     any other reason, or none: withdraw;
//   - an HTTP request that dropped without notifications/cancelled (within
//     reasonGrace): keep. It is how clients time out: up to protocol
//     2025-11-25 disconnection is not cancellation, and from 2026-07-28 a
//     closed stream is the only signal of a timeout and a stop alike.
func (t *askTool) abandoned(ctx context.Context, key callKey, tagged bool, log zerolog.Logger) bool {
	cause := context.Cause(ctx)
	if errors.Is(cause, errShutdown) || errors.Is(cause, errSessionDeleted) {
		return true
	}
	grace := time.Duration(0)
	if errors.Is(cause, errPostDropped) {
		grace = reasonGrace
	}
	if tagged && t.cancels != nil {
		if reason, ok := t.cancels.reason(key, grace); ok {
			log.Info().Str("reason", reason).Bool("timeout", timeoutReason(reason)).Msg("mcp ask: the client cancelled the call")
			return !timeoutReason(reason)
		}
	}
	return !errors.Is(cause, errPostDropped)
}

func (t *askTool) retryFor() time.Duration {
	if t.waitRetryFor > 0 {
		return t.waitRetryFor
	}
	return waitRetryFor
}

// keep remembers an ask left open by a call of session, for get_answer
// without an id.
func (t *askTool) keep(session, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.kept == nil {
		t.kept = map[string][]string{}
	}
	if _, ok := t.kept[session]; !ok {
		if len(t.sessions) >= maxKeptSessions {
			delete(t.kept, t.sessions[0])
			t.sessions = t.sessions[1:]
		}
		t.sessions = append(t.sessions, session)
	}
	ids := append(t.kept[session], id)
	if len(ids) > maxKept {
		ids = ids[len(ids)-maxKept:]
	}
	t.kept[session] = ids
}

// lastKept returns the newest ask left open in session, or "".
func (t *askTool) lastKept(session string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := t.kept[session]
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1]
}

func sessionOf(req *mcpsdk.CallToolRequest) string {
	if req.Session == nil {
		return ""
	}
	return req.Session.ID()
}

// sendProgress sends a progress notification now and every t.interval until
// the returned stop is called, if the client gave a progress token. stop
// waits for the sender to finish.
func (t *askTool) sendProgress(ctx context.Context, req *mcpsdk.CallToolRequest, ask interaction.Ask, log zerolog.Logger) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || t.interval <= 0 {
		return func() {}
	}
	where := "Slack"
	if ask.Channel != "" {
		where = "Slack (" + ask.Channel + ")"
	}
	who := "a person"
	if ask.Wanted > 1 {
		who = fmt.Sprintf("%d people", ask.Wanted)
	}
	start := time.Now()
	notify := func() {
		elapsed := time.Since(start)
		err := req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      elapsed.Seconds(), // grows with every notification
			Message:       fmt.Sprintf("Waiting for %s to answer in %s: %s so far", who, where, elapsed.Round(time.Second)),
		})
		if err != nil && ctx.Err() == nil {
			log.Debug().Err(err).Msg("mcp ask: progress notification failed")
		}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		notify()
		ticker := time.NewTicker(t.interval)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				notify()
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// endedResult is the result of an ended ask: its answer, or the tool error
// of the code it ended with.
func endedResult(ask interaction.Ask) (*mcpsdk.CallToolResult, error) {
	ans, err := ask.Result()
	if err != nil {
		return errorResult(err), nil
	}
	return answerResult(ans, teamSummary(ask))
}

// answerResult carries the answer as structured content and as its compact
// JSON text, byte for byte what json.Marshal gives. A team ask's summary
// (who answered what) follows the JSON in the text, after a blank line, so
// the model reads both while the structured content stays the seam's
// answer.
func answerResult(ans interaction.Answer, summary string) (*mcpsdk.CallToolResult, error) {
	b, err := json.Marshal(ans)
	if err != nil {
		return nil, fmt.Errorf("marshalling the answer: %w", err)
	}
	text := string(b)
	if summary != "" {
		text += "\n\n" + summary
	}
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: text}},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// errorResult is a tool error whose text is "CODE: message", CODE being the
// seam's error code (INTERNAL for errors that carry none).
func errorResult(err error) *mcpsdk.CallToolResult {
	text := string(interaction.ErrorCode(err))
	if msg := interaction.ErrorMessage(err); msg != "" {
		text += ": " + msg
	}
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}
	res.SetError(err)
	return res
}

// agentOf names the calling MCP client as the ask's agent, so that the
// person sees who asks.
func agentOf(info *mcpsdk.Implementation) *interaction.Agent {
	if info == nil || info.Name == "" {
		return nil
	}
	a := &interaction.Agent{ID: clip(info.Name, interaction.MaxAgentNameLen)}
	if info.Title != "" && info.Title != info.Name {
		a.Name = clip(info.Title, interaction.MaxAgentNameLen)
	}
	return a
}

func agentName(a *interaction.Agent) string {
	switch {
	case a == nil:
		return ""
	case a.Name != "":
		return a.Name
	}
	return a.ID
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
