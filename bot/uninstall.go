package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slackask/slackask/installs"
)

// uninstallEvent follows app_uninstalled, and tokens_revoked naming the
// bot, for the installation the event came through: its token no longer
// works, so nobody can answer its workspace's pending asks. They end
// aborted, saying why (asks.Service.EndWorkspace); other workspaces keep
// working. With many workspaces the installation is removed
// (Config.Uninstalls) and its client and Homes forgotten; a
// single-workspace bot reports the app uninstalled (Ready) until the
// process is restarted with a working token. It does not block.
func (b *Bot) uninstallEvent(ctx context.Context, ev EventCallback) {
	if ev.Type != "app_uninstalled" && ev.Type != "tokens_revoked" {
		return
	}
	if !b.routes.many() {
		home, _ := b.Home()
		if ev.Team != "" && home != "" && ev.Team != home {
			return // another workspace's
		}
		if !b.revokes(ev, b.botUser()) {
			return
		}
		why := uninstallWhy(ev)
		msg := fmt.Sprintf("%s %s", why, home)
		b.routes.space("").gone.Store(&msg)
		b.endWorkspace(ctx, home, ev.Type, why, nil)
		return
	}
	key := ev.key()
	if key == "" {
		return
	}
	b.handlers.Go(func() {
		// Removed and ended whatever becomes of ctx: a shutdown must not
		// leave a removed installation's asks pending.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		c, err := b.keyConn(ctx, key)
		switch {
		case errors.Is(err, installs.ErrNotInstalled):
			// Removed already (Slack sent it again): its asks are ended
			// again, which ends nothing twice.
		case err != nil:
			b.log.Error().Err(err).Str("team", key).Str("event", ev.Type).Msg("could not read the installation Slack says is gone; its asks end at their deadline")
			return
		case !b.revokes(ev, c.botUser):
			return // a user's token, not the bot's
		}
		enterprise, team := ev.Enterprise, ev.Team
		if key == ev.Enterprise {
			team = "" // the org-wide install
		}
		remove := func(ctx context.Context) error {
			b.routes.drop(key)
			b.home.forget(key)
			if b.cfg.Uninstalls == nil {
				return nil
			}
			return b.cfg.Uninstalls.Remove(ctx, enterprise, team)
		}
		b.endWorkspace(ctx, key, ev.Type, uninstallWhy(ev), remove)
	})
}

// revokes reports whether ev ends the bot user botUser's token: any
// app_uninstalled, or a tokens_revoked that names it.
func (b *Bot) revokes(ev EventCallback, botUser string) bool {
	return ev.Type == "app_uninstalled" || slices.Contains(ev.Tokens.Bot, botUser)
}

func uninstallWhy(ev EventCallback) string {
	if ev.Type == "tokens_revoked" {
		return "the slackask app's bot token was revoked in this workspace"
	}
	return "the slackask app was uninstalled from this workspace"
}

// endWorkspace removes the installation (remove, when set) and ends the
// pending asks of workspace key aborted with why, on a handler of its own
// (or this one, when already on one: remove set).
func (b *Bot) endWorkspace(ctx context.Context, key, event, why string, remove func(context.Context) error) {
	b.log.Warn().Str("team", key).Str("event", event).Msg("app uninstalled: ending the workspace's pending asks")
	end := func() {
		// The ends are stored whatever becomes of ctx: a shutdown must not
		// leave some pending.
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if remove != nil {
			if err := remove(ectx); err != nil {
				b.log.Error().Err(err).Str("team", key).Msg("could not remove the uninstalled installation")
			}
		}
		n, err := b.svc.EndWorkspace(ectx, key, why)
		if err != nil {
			b.log.Error().Err(err).Str("team", key).Int("ended", n).Msg("could not end every pending ask of the uninstalled workspace; the rest end at the next start's recovery or their deadline")
			return
		}
		b.log.Info().Str("team", key).Int("ended", n).Msg("ended the pending asks of the uninstalled workspace")
	}
	if remove != nil {
		end()
		return
	}
	b.handlers.Go(end)
}

// botUser is the bot's user id from auth.test ("" before it).
func (b *Bot) botUser() string {
	if p := b.botUserID.Load(); p != nil {
		return *p
	}
	return ""
}
