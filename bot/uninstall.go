package bot

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// uninstallEvent follows app_uninstalled, and tokens_revoked naming the
// bot, for this workspace: the bot's token no longer works, so nobody can
// answer the workspace's pending asks. They end aborted, saying why
// (asks.Service.EndWorkspace), and Ready reports the app uninstalled until
// the process is restarted with a working token. It does not block.
func (b *Bot) uninstallEvent(ctx context.Context, ev EventCallback) {
	home, _ := b.Home()
	switch {
	case ev.Team != "" && home != "" && ev.Team != home:
		return // another workspace's
	case ev.Type == "app_uninstalled":
	case ev.Type == "tokens_revoked" && slices.Contains(ev.Tokens.Bot, b.botUser()):
	default:
		return
	}
	why := "the slackask app was uninstalled from this workspace"
	if ev.Type == "tokens_revoked" {
		why = "the slackask app's bot token was revoked in this workspace"
	}
	msg := fmt.Sprintf("%s %s", why, home)
	b.gone.Store(&msg)
	b.log.Warn().Str("team", home).Str("event", ev.Type).Msg("app uninstalled: ending the workspace's pending asks")
	b.handlers.Go(func() {
		// The ends are stored whatever becomes of ctx: a shutdown must not
		// leave some pending.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		n, err := b.svc.EndWorkspace(ectx, home, why)
		if err != nil {
			b.log.Error().Err(err).Int("ended", n).Msg("could not end every pending ask of the uninstalled workspace; the rest end at the next start's recovery or their deadline")
			return
		}
		b.log.Info().Int("ended", n).Msg("ended the pending asks of the uninstalled workspace")
	})
}

// botUser is the bot's user id from auth.test ("" before it).
func (b *Bot) botUser() string {
	if p := b.botUserID.Load(); p != nil {
		return *p
	}
	return ""
}
