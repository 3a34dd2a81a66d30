package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// maxRateLimitRetries bounds how often one call waits out a 429.
const maxRateLimitRetries = 20

// call runs one Web API call, waiting out 429s for as long as Slack's
// Retry-After says (bounded by ctx and maxRateLimitRetries). Other
// failures come back as SLACK_ERROR, wrapped with the method name.
func (b *Bot) call(ctx context.Context, method string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || attempt >= maxRateLimitRetries {
			return fmt.Errorf("%s: %w", method, slackErr(err))
		}
		wait := max(rl.RetryAfter, 100*time.Millisecond)
		b.log.Info().Str("method", method).Dur("retry_after", wait).Msg("rate limited by Slack; waiting")
		if !clock.Sleep(ctx, wait) {
			return fmt.Errorf("%s: %w", method, interaction.Errorf(interaction.SlackError, "rate limited and gave up: %v", ctx.Err()))
		}
	}
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

// ephemeral tells one person something only they see, in the ask's
// conversation. Failures are logged: an ephemeral is a courtesy.
func (b *Bot) ephemeral(ctx context.Context, rec store.Record, user, text string) {
	if rec.Channel == "" || user == "" {
		return
	}
	err := b.call(ctx, "chat.postEphemeral", func(ctx context.Context) error {
		opts := []slack.MsgOption{slack.MsgOptionText(text, false)}
		if rec.ThreadTS != "" {
			opts = append(opts, slack.MsgOptionTS(rec.ThreadTS))
		}
		_, err := b.api.PostEphemeralContext(ctx, rec.Channel, user, opts...)
		return err
	})
	if err != nil {
		b.log.Warn().Err(err).Str("ask", rec.ID).Msg("ephemeral message failed")
	}
}
