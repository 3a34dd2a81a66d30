package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// handleGetAnswer is get_answer: the answer of an ask left open, "pending",
// or the error code it ended with. It never withdraws the ask: a call that
// ends early only stops looking.
func (t *askTool) handleGetAnswer(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	ctx, done := t.callContext(ctx, req)
	defer done()
	if key, ok := keyOf(req); ok && t.cancels != nil {
		defer t.cancels.forget(key)
	}

	var in getAnswerInput
	if err := checkObject(req.Params.Arguments, &in, ` with an "id"`); err != nil {
		return errorResult(err), nil
	}
	waitFor, bounded, err := parseWait(in.WaitSeconds)
	if err != nil {
		return errorResult(err), nil
	}
	id := in.ID
	if id == "" {
		if id = t.lastKept(sessionOf(req)); id == "" {
			return errorResult(interaction.Errorf(interaction.InvalidRequest,
				`give the "id" of the ask, as ask_user_question's result named it`)), nil
		}
	}
	ask, err := t.waitFor(ctx, id, waitFor, bounded)
	switch {
	case err != nil:
		return errorResult(err), nil
	case !ask.Status.Ended():
		return pendingResult(ask), nil
	}
	return endedResult(ask)
}

// waitFor waits until the ask ends, ctx is done or (when bounded) d has
// passed, and returns it as it then is, retrying failed Waits (not
// NOT_FOUND) for t.retryFor(). The first look at the ask is bounded by ctx
// alone, so that d = 0 checks once rather than failing on a deadline that
// has already passed.
func (t *askTool) waitFor(ctx context.Context, id string, d time.Duration, bounded bool) (interaction.Ask, error) {
	ask, err := t.svc.Get(ctx, id)
	if err != nil && (interaction.ErrorCode(err) == interaction.NotFound || ctx.Err() != nil) {
		return ask, err
	}
	if bounded {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	b := backoff.Backoff{Min: minRetryBackoff, Max: maxRetryBackoff}
	var since time.Time // the start of the run of failed Waits
	_ = backoff.Retry{Pause: &b}.Do(ctx, func(int) error {
		switch {
		case ctx.Err() != nil:
			return backoff.Stop(ctx.Err())
		case err == nil && ask.Status.Ended():
			return nil
		}
		start := time.Now()
		var cur interaction.Ask
		cur, err = t.svc.Wait(ctx, id)
		switch {
		case err == nil:
			ask, since = cur, time.Time{}
			b.Reset()
			if ask.Status.Ended() {
				return nil
			}
			// A Wait that returned the ask pending early is repeated,
			// without spinning.
			return backoff.After(minRetryBackoff-time.Since(start), errStillPending)
		case interaction.ErrorCode(err) == interaction.NotFound, ctx.Err() != nil:
			return backoff.Stop(err)
		}
		if since.IsZero() {
			since = start
		}
		if time.Since(since) >= t.retryFor() {
			return backoff.Stop(err)
		}
		return err
	})
	if ask.ID == "" || interaction.ErrorCode(err) == interaction.NotFound {
		return ask, err
	}
	if err != nil && ctx.Err() == nil {
		return ask, err // failed for retryFor
	}
	return ask, nil
}

// errStillPending: a Wait returned the ask pending.
var errStillPending = errors.New("mcp: the ask is still pending")

// pendingText is what a call that stopped waiting tells the model. For a
// team ask it says how many of the people wanted have answered, and who.
func pendingText(ask interaction.Ask) string {
	id := ask.ID
	status := "nobody has answered it yet"
	if ask.Wanted > 1 {
		names := make([]string, len(ask.Responses))
		for i, r := range ask.Responses {
			names[i] = userName(r.User)
		}
		status = fmt.Sprintf("%d of the %d people it waits for have answered", len(ask.Responses), ask.Wanted)
		if len(names) > 0 {
			status += " (" + strings.Join(names, ", ") + ")"
		}
	}
	return fmt.Sprintf(`Still waiting: the question is open in Slack and %s (ask id %q). `+
		`Do not ask it again. To get the answer, call %s with {"id":%q}; it waits for the answer `+
		`(pass "waitSeconds" to return sooner) and says again if it is still pending. `+
		`Meanwhile you may go on with work that does not depend on the answer.`, status, id, GetAnswerToolName, id)
}

// pendingResult is the result of a call that stopped waiting with the ask
// still open: not an error, with the ask id in text and structure.
func pendingResult(ask interaction.Ask) *mcpsdk.CallToolResult {
	text := pendingText(ask)
	b, _ := json.Marshal(map[string]string{"status": string(interaction.StatusPending), "askId": ask.ID, "message": text})
	return &mcpsdk.CallToolResult{
		Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: text}},
		StructuredContent: json.RawMessage(b),
	}
}
