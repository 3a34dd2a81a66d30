package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/bot"
	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/slackoauth"
	"github.com/slackask/slackask/store"
)

// oauthStateSecret names the store secret that signs OAuth states: one
// key for every replica sharing the database.
const oauthStateSecret = "slack-oauth-state"

// openInstalls, when OAuth installs are configured (SLACK_CLIENT_ID and
// SLACK_CLIENT_SECRET), returns the store-backed installations: the one
// Source of the process (the bot's, and the install pages'), so that
// each installation is refreshed once at a time in it. It returns nil
// without OAuth. Rows sealed under SLACKASK_ENCRYPTION_KEY_PREVIOUS are
// sealed again under the current key at start (as `slackask installs
// rekey` does), so a rotation finishes by itself.
func openInstalls(ctx context.Context, cfg config.Config, st store.Store, hc *http.Client, log zerolog.Logger) (*installs.Stored, error) {
	if !cfg.OAuth() {
		return nil, nil
	}
	sealer, err := cfg.Sealer()
	if err != nil {
		return nil, err
	}
	l := log.With().Str("component", "installs").Logger()
	stored := installs.NewStored(st, sealer, installs.StoredConfig{
		Refresher: installs.SlackRefresher{ClientID: cfg.SlackClientID, ClientSecret: cfg.SlackClientSecret, APIURL: cfg.SlackAPIURL, HTTP: hc},
		Teams:     installs.SlackTeams{APIURL: cfg.SlackAPIURL, HTTP: hc},
		Log:       &l,
	})
	if cfg.EncryptionKeyPrevious != "" {
		n, total, err := stored.Rekey(ctx)
		if err != nil {
			return nil, fmt.Errorf("sealing installations under SLACKASK_ENCRYPTION_KEY: %w", err)
		}
		l.Info().Int("resealed", n).Int("installations", total).Str("key_id", sealer.KeyID()).
			Msg("installations sealed under the current key; SLACKASK_ENCRYPTION_KEY_PREVIOUS can be removed once every replica runs with this key")
	}
	return stored, nil
}

// mountOAuth mounts /slack/install and /slack/oauth_redirect with mount,
// saving installations in stored; nothing when stored is nil (no OAuth).
func mountOAuth(ctx context.Context, cfg config.Config, st store.Store, stored *installs.Stored, hc *http.Client, mount func(string, http.Handler), log zerolog.Logger) error {
	if stored == nil {
		return nil
	}
	secret, err := st.Secret(ctx, oauthStateSecret)
	if err != nil {
		return fmt.Errorf("the OAuth state key: %w", err)
	}
	enc, err := installs.ParseKey("SLACKASK_ENCRYPTION_KEY", cfg.EncryptionKey)
	if err != nil {
		return err
	}
	// States are signed under a key made of both the database's secret
	// and the encryption key: neither a copy of the database nor the
	// environment alone forges one. Every replica derives the same.
	m := hmac.New(sha256.New, enc)
	m.Write([]byte("slackask oauth state key\x00"))
	m.Write(secret)
	key := m.Sum(nil)
	h, err := slackoauth.New(slackoauth.Config{
		ClientID: cfg.SlackClientID, ClientSecret: cfg.SlackClientSecret, Scopes: bot.Scopes,
		RedirectURL: cfg.PublicURL + slackoauth.RedirectPath, AuthorizeURL: cfg.SlackAuthorizeURL, APIURL: cfg.SlackAPIURL,
		PKCE: cfg.OAuthPKCE, StateKey: key, Nonces: st, Saver: stored, HTTP: hc, Log: log,
	})
	if err != nil {
		return err
	}
	h.Mount(mount)
	return nil
}
