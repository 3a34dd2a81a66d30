package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
)

// maxRateLimitRetries bounds how often one call waits out a 429.
const maxRateLimitRetries = 20

// rateLimitBackoff paces the retries of a 429 that came without a
// Retry-After.
var rateLimitBackoff = backoff.Backoff{Min: 100 * time.Millisecond, Max: 30 * time.Second}

// retryAfter is the pause Slack asked for with a 429, or pause's next
// when it named none.
func retryAfter(pause *backoff.Backoff, rl *slack.RateLimitedError) time.Duration {
	if rl.RetryAfter > 0 {
		return rl.RetryAfter
	}
	return pause.Next()
}

// call runs one Web API call, waiting out 429s for as long as Slack's
// Retry-After says (bounded by ctx and maxRateLimitRetries). Other
// failures come back as SLACK_ERROR, wrapped with the method name.
func (b *Bot) call(ctx context.Context, method string, fn func(context.Context) error) error {
	pause := rateLimitBackoff
	err := backoff.Retry{Pause: &pause, Tries: maxRateLimitRetries + 1,
		OnRetry: func(_ int, _ error, wait time.Duration) {
			b.log.Info().Str("method", method).Dur("retry_after", wait).Msg("rate limited by Slack; waiting")
		}}.Do(ctx, func(int) error { return retryRateLimit(fn(ctx)) })
	return callErr(ctx, method, err)
}

// retryRateLimit marks err for backoff.Retry: a 429 is retried after its
// Retry-After (the backoff's next pause when it named none); anything
// else is final.
func retryRateLimit(err error) error {
	var rl *slack.RateLimitedError
	switch {
	case err == nil || !errors.As(err, &rl):
		return backoff.Stop(err)
	case rl.RetryAfter > 0:
		return backoff.After(rl.RetryAfter, err)
	}
	return err
}

// callErr is the error of a call of method that ended with err: nil, a
// SLACK_ERROR saying it gave up when ctx ended while it waited out a 429,
// or Slack's error.
func callErr(ctx context.Context, method string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, backoff.ErrInterrupted):
		return fmt.Errorf("%s: %w", method, interaction.Errorf(interaction.SlackError, "rate limited and gave up: %v", ctx.Err()))
	}
	return fmt.Errorf("%s: %w", method, slackErr(err))
}

// slackErr turns a slack-go error into a SLACK_ERROR *interaction.Error
// whose message carries Slack's error string and details.
func slackErr(err error) error {
	var ie *interaction.Error
	if errors.As(err, &ie) {
		return err
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		msg := se.Err
		details := append([]string(nil), se.ResponseMetadata.Messages...)
		for _, e := range se.Errors {
			details = append(details, fmt.Sprint(e))
		}
		if len(details) > 0 {
			msg += " (" + strings.Join(details, "; ") + ")"
		}
		return interaction.Errorf(interaction.SlackError, "%s", msg)
	}
	return interaction.Errorf(interaction.SlackError, "%v", err)
}

// callerMistakes are Slack's errors that say the ask named a conversation,
// person or group that is not there for the app: the caller's to fix, not
// Slack's failing, so they are INVALID_QUESTION (400), not SLACK_ERROR.
var callerMistakes = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true,
	"user_not_found": true, "user_not_visible": true, "users_not_found": true,
	"no_such_subteam": true, "subteam_not_found": true,
}

// callerMistake returns, when raw (a call's own slack-go error) is Slack
// refusing it for one of callerMistakes, an INVALID_QUESTION naming what
// ("channel \"C1\"") and Slack's error, wrapped with method.
func callerMistake(raw error, method, what string) (error, bool) {
	var se slack.SlackErrorResponse
	if raw == nil || !errors.As(raw, &se) || !callerMistakes[se.Err] {
		return nil, false
	}
	return fmt.Errorf("%s: %w", method, interaction.Errorf(interaction.InvalidQuestion, "%s: Slack says %s", what, se.Err)), true
}
