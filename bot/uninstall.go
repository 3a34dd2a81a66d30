package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/installs"
)

// uninstallEvent follows app_uninstalled, and tokens_revoked naming the
// bot, for the installation the event came through: its token no longer
// works, so nobody can answer its workspace's pending asks. They end
// aborted, saying why (asks.Service.EndWorkspace); other workspaces keep
// working. With many workspaces the installation is removed
// (Config.Uninstalls; for an org-wide install, that one only: a
// workspace of the org with its own install keeps it, as Slack does, each
// installation having its own token and its own uninstall event) and its
// client and Homes forgotten; a single-workspace bot reports the
// app uninstalled (Ready) until the process is restarted with a working
// token. It does not block.
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
		b.handlers.Go(func() { b.endWorkspace(ctx, home, ev.Type, why) })
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
		keys := []string{key}
		if b.cfg.Uninstalls != nil {
			enterprise, team := ev.Enterprise, ev.Team
			if key == ev.Enterprise {
				team = "" // the org-wide install alone
			}
			removed, err := b.cfg.Uninstalls.Remove(ctx, enterprise, team)
			if err != nil {
				b.log.Error().Err(err).Str("team", key).Msg("could not remove the uninstalled installation; its calls fail until it is")
			}
			for _, k := range removed {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
		for _, k := range keys {
			b.routes.drop(k)
			b.home.forget(k)
			b.endWorkspace(ctx, k, ev.Type, uninstallWhy(ev))
		}
	})
}

// teamAccessEvent follows team_access_granted and team_access_revoked:
// an org admin added the org-wide installation of ev's enterprise to
// workspaces, or took it from them. The workspaces it serves are listed
// again (installs.Stored.Learn: auth.teams.list), so that an ask naming
// one by its own id (T…) finds the installation, or no longer does. On a
// revoke, the pending asks the installation posted in the workspaces it
// was taken from (ev.TeamIDs) end aborted, saying why
// (asks.Service.EndWorkspacesOf): the app can no longer see them there,
// so nobody can answer them. Then its asks whose workspace is not
// recorded (made naming the org, E…, or before the workspace was kept)
// are asked of Slack one by one (asks.Service.EndUnreachableOf,
// Bot.reachable): those whose conversation the installation no longer
// sees end the same way; those it sees (in a workspace it keeps, or
// shared with one) and those Slack gave no answer about stay pending.
// Those workspaces' asks through their own installs and the org's other
// workspaces' stay pending. The listing takes at most a minute, and so
// does the ending pass. It does not block.
func (b *Bot) teamAccessEvent(ctx context.Context, ev EventCallback) {
	if ev.Type != "team_access_granted" && ev.Type != "team_access_revoked" || ev.Enterprise == "" || !b.routes.many() {
		return
	}
	learner, _ := b.routes.source.(interface {
		Learn(ctx context.Context, enterprise string) error
	})
	revoked := ev.Type == "team_access_revoked" && len(ev.TeamIDs) > 0
	if learner == nil && !revoked {
		return
	}
	b.handlers.Go(func() {
		if learner != nil {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if err := learner.Learn(ctx, ev.Enterprise); err != nil {
				b.log.Warn().Err(err).Str("enterprise", ev.Enterprise).Str("event", ev.Type).Msg("could not list the workspaces of the org-wide installation again; an unknown team asks once more")
			}
		}
		// After Learn: an ask naming a revoked team no longer finds the
		// installation, so none is made there once its asks are ended.
		if revoked {
			const why = "the slackask app's org-wide installation was removed from this workspace"
			log := b.log.With().Str("enterprise", ev.Enterprise).Strs("teams", ev.TeamIDs).Str("event", ev.Type).Logger()
			b.endAsks(ctx, log, func(ctx context.Context) (int, error) {
				n, err := b.svc.EndWorkspacesOf(ctx, ev.Enterprise, ev.TeamIDs, why)
				if err != nil {
					return n, err
				}
				m, err := b.svc.EndUnreachableOf(ctx, ev.Enterprise, b.reachable, why)
				return n + m, err
			})
		}
	})
}

// unreachableErrs are conversations.info's errors that say for sure the
// token no longer sees the conversation: gone, or in a workspace its
// org-wide installation was taken from.
var unreachableErrs = map[string]bool{"channel_not_found": true, "team_access_not_granted": true}

// reachable implements asks.Reachable: whether the installation serving
// rec (its TeamID) still sees the conversation of its message, as Slack's
// conversations.info answers through that installation's client (429s
// waited out within ctx). A conversation id names one conversation in the
// whole organization, so an org-wide token names no workspace (team_id)
// to it. Slack's error unreachableErrs is a no; any other failure is an
// error, no answer.
func (b *Bot) reachable(ctx context.Context, rec asks.Record) (bool, error) {
	const method = "conversations.info"
	c, err := b.keyConn(ctx, rec.TeamID)
	if err != nil {
		return false, fmt.Errorf("%s: %w", method, err)
	}
	gone := false
	err = b.call(ctx, method, func(ctx context.Context) error {
		_, err := c.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: rec.Channel})
		var se slack.SlackErrorResponse
		if errors.As(err, &se) && unreachableErrs[se.Err] {
			gone = true
			return nil
		}
		return err
	})
	if err != nil {
		return false, err
	}
	return !gone, nil
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

// endWorkspace ends the pending asks of workspace key aborted with why.
func (b *Bot) endWorkspace(ctx context.Context, key, event, why string) {
	log := b.log.With().Str("team", key).Str("event", event).Logger()
	b.endAsks(ctx, log, func(ctx context.Context) (int, error) { return b.svc.EndWorkspace(ctx, key, why) })
}

// endAsks runs end, which ends the pending asks an event left nobody to
// answer, logging to log. The ends are stored whatever becomes of ctx: a
// shutdown must not leave some pending.
func (b *Bot) endAsks(ctx context.Context, log zerolog.Logger, end func(context.Context) (int, error)) {
	log.Warn().Msg("the app lost a workspace: ending its pending asks")
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	n, err := end(ctx)
	if err != nil {
		log.Error().Err(err).Int("ended", n).Msg("could not end every pending ask of the workspace the app lost; the others stay pending until something else ends them (their deadline)")
		return
	}
	log.Info().Int("ended", n).Msg("ended the pending asks of the workspace the app lost")
}

// botUser is the bot's user id from auth.test ("" before it).
func (b *Bot) botUser() string {
	if p := b.botUserID.Load(); p != nil {
		return *p
	}
	return ""
}
