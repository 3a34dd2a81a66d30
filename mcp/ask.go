package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

const (
	// createTimeout bounds posting an ask. Create runs detached from the
	// call's context so that a call cancelled mid-create still learns the
	// ask's id and can withdraw it instead of leaving it pending in Slack.
	createTimeout = time.Minute
	// withdrawTimeout bounds withdrawing the ask of a cancelled call.
	withdrawTimeout = 30 * time.Second
	// minRewait keeps a Wait that returns a pending ask early (a long poll
	// that elapsed) from turning into a busy loop. It is also the first
	// delay before retrying a failed Wait.
	minRewait = 250 * time.Millisecond
	// waitRetryFor is how long Wait may keep failing before the call gives up.
	waitRetryFor = 2 * time.Minute
	// maxRetryBackoff caps the delay between retries of a failed Wait.
	maxRetryBackoff = 10 * time.Second
)

// askTool is the handler of ask_user_question.
type askTool struct {
	svc            interaction.AskService
	log            zerolog.Logger
	interval       time.Duration   // progress notifications; <= 0: none
	defaultChannel string          // used when a call names no channel and no user
	base           context.Context // nil, or ends every call in flight when done
	calls          *httpCalls      // served by Handler: ends calls nobody listens to
	waitRetryFor   time.Duration   // tests: 0 means waitRetryFor
}

func (t *askTool) handle(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	// ctx ends when the client cancels the call or its session ends; cancel
	// also ends it when the server's life does, or (HTTP) the call's POST.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if t.base != nil {
		defer context.AfterFunc(t.base, cancel)()
	}
	if t.calls != nil {
		defer t.calls.track(req, cancel)()
	}

	in, err := decodeInput(req.Params.Arguments, t.defaultChannel)
	if err != nil {
		return errorResult(err), nil
	}
	if in.Agent == nil {
		in.Agent = agentOf(req.ClientInfo())
	}
	if err := interaction.Validate(in.Request); err != nil {
		return errorResult(err), nil
	}

	cctx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	ask, err := t.svc.Create(cctx, in)
	cancelCreate()
	if err != nil {
		t.log.Warn().Err(err).Str("code", string(interaction.ErrorCode(err))).Msg("mcp ask not created")
		return errorResult(err), nil
	}
	log := t.log.With().Str("ask", ask.ID).Logger()
	log.Info().Str("channel", ask.Channel).Int("questions", len(ask.Questions)).
		Str("agent", agentName(ask.Agent)).Msg("mcp ask created")

	stop := t.sendProgress(ctx, req, ask, log)
	ask, err = t.await(ctx, ask.ID, log)
	stop()
	if err != nil {
		log.Warn().Err(err).Msg("mcp ask: waiting failed")
		return errorResult(err), nil
	}
	ans, err := ask.Result()
	log.Info().Str("status", string(ask.Status)).Msg("mcp ask ended")
	if err != nil {
		return errorResult(err), nil
	}
	return answerResult(ans)
}

// await waits until the ask has ended. When ctx ends first (the client
// cancelled the call, the session or the server is closing) it withdraws the
// ask, which then ends as aborted. Failures of Wait other than NOT_FOUND
// (say, slackask serve restarting under an HTTP client) are retried for
// waitRetryFor; then the ask is withdrawn, as nobody would get its answer,
// and the failure returned.
func (t *askTool) await(ctx context.Context, id string, log zerolog.Logger) (interaction.Ask, error) {
	var failingSince time.Time
	backoff := minRewait
	for {
		start := time.Now()
		ask, err := t.svc.Wait(ctx, id)
		switch {
		case err == nil && ask.Status.Ended():
			return ask, nil
		case ctx.Err() != nil:
			return t.withdraw(ctx, id, log)
		case err != nil && interaction.ErrorCode(err) == interaction.NotFound:
			return ask, err
		case err != nil:
			if failingSince.IsZero() {
				failingSince = start
			}
			if time.Since(failingSince) >= t.retryFor() {
				_, _ = t.withdraw(ctx, id, log)
				return ask, err
			}
			log.Warn().Err(err).Dur("retry_in", backoff).Msg("mcp ask: waiting failed, retrying")
			sleep(ctx, backoff)
			backoff = min(2*backoff, maxRetryBackoff)
			continue
		}
		failingSince, backoff = time.Time{}, minRewait
		// Wait returned a pending ask early (a long poll that elapsed): wait
		// again, without spinning.
		if d := time.Since(start); d < minRewait {
			sleep(ctx, minRewait-d)
		}
	}
}

func (t *askTool) retryFor() time.Duration {
	if t.waitRetryFor > 0 {
		return t.waitRetryFor
	}
	return waitRetryFor
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}

func (t *askTool) withdraw(ctx context.Context, id string, log zerolog.Logger) (interaction.Ask, error) {
	reason := context.Cause(ctx)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	ask, err := t.svc.Withdraw(wctx, id)
	if err != nil {
		log.Error().Err(err).Msg("mcp ask: withdrawing failed")
		return interaction.Ask{}, interaction.Errorf(interaction.AskAborted,
			"the call was cancelled (%v); withdrawing the ask failed: %s", reason, interaction.ErrorMessage(err))
	}
	log.Info().AnErr("reason", reason).Str("status", string(ask.Status)).Msg("mcp ask withdrawn")
	return ask, nil
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
	start := time.Now()
	notify := func() {
		elapsed := time.Since(start)
		err := req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      elapsed.Seconds(), // grows with every notification
			Message:       fmt.Sprintf("Waiting for a person to answer in %s: %s so far", where, elapsed.Round(time.Second)),
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

// answerResult carries the answer as structured content and as its compact
// JSON text, byte for byte what json.Marshal gives.
func answerResult(ans interaction.Answer) (*mcpsdk.CallToolResult, error) {
	b, err := json.Marshal(ans)
	if err != nil {
		return nil, fmt.Errorf("marshalling the answer: %w", err)
	}
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: string(b)}},
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
