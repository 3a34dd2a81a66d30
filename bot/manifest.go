package bot

import "encoding/json"

// Scopes are the bot token scopes slackask needs: post and update its
// messages and ephemerals (chat:write), open DMs (im:write), resolve
// user groups of responders (usergroups:read), read user names
// (users:read), find, after a crash, a message it posted but had not
// recorded yet (channels:history, groups:history, im:history), and tell
// whether an org-wide install taken from some workspaces still sees an
// ask's conversation (conversations.info: channels:read, groups:read,
// im:read).
var Scopes = []string{"chat:write", "im:write", "usergroups:read", "users:read", "channels:history", "groups:history", "im:history",
	"channels:read", "groups:read", "im:read"}

// Manifest returns the Slack app manifest (JSON) to paste into "Create an
// app → From an app manifest": a bot user, Socket Mode, interactivity,
// the Home tab with the app_home_opened event, and Scopes. name is the app's display name ("slackask" when empty). It
// returns an error only if the manifest cannot be encoded.
func Manifest(name string) ([]byte, error) {
	return json.MarshalIndent(manifest(name, ""), "", "  ")
}

// HTTPEvents are the events HTTP mode subscribes to besides
// app_home_opened: an uninstall and a revocation, which end the
// installation, and an org admin adding an org-wide install to
// workspaces or taking it from them (Enterprise Grid).
var HTTPEvents = []string{"app_uninstalled", "tokens_revoked", "team_access_granted", "team_access_revoked"}

// HTTPManifest is Manifest for Slack's HTTP mode: no Socket Mode; Slack
// POSTs interactivity to baseURL/slack/interactivity and events
// (HTTPEvents) to baseURL/slack/events; OAuth installs come back to
// baseURL/slack/oauth_redirect, org-wide ones too (org_deploy_enabled). baseURL is the public https URL
// of slackask, without a trailing slash.
func HTTPManifest(name, baseURL string) ([]byte, error) {
	return json.MarshalIndent(manifest(name, baseURL), "", "  ")
}

// manifest builds the manifest; baseURL empty is Socket Mode.
func manifest(name, baseURL string) map[string]any {
	if name == "" {
		name = "slackask"
	}
	interactivity := map[string]any{"is_enabled": true}
	settings := map[string]any{
		"interactivity":          interactivity,
		"socket_mode_enabled":    baseURL == "",
		"org_deploy_enabled":     false,
		"token_rotation_enabled": false,
	}
	// app_home_opened: a person opened the Home tab (published then).
	events := map[string]any{"bot_events": []string{"app_home_opened"}}
	settings["event_subscriptions"] = events
	if baseURL != "" {
		interactivity["request_url"] = baseURL + "/slack/interactivity"
		events["request_url"] = baseURL + "/slack/events"
		events["bot_events"] = append([]string{"app_home_opened"}, HTTPEvents...)
		// Apps for many workspaces are installed with OAuth (and, on
		// Enterprise Grid, may be installed org-wide).
		settings["org_deploy_enabled"] = true
	}
	oauth := map[string]any{"scopes": map[string]any{"bot": Scopes}}
	if baseURL != "" {
		oauth["redirect_urls"] = []string{baseURL + "/slack/oauth_redirect"}
	}
	return map[string]any{
		"_metadata": map[string]any{"major_version": 1, "minor_version": 1},
		"display_information": map[string]any{
			"name":             name,
			"description":      "Lets programs and AI agents ask people questions and get structured answers.",
			"background_color": "#2c2d30",
		},
		"features": map[string]any{
			"bot_user": map[string]any{"display_name": name, "always_online": true},
			// The Home tab holds each person's inbox; the Messages tab
			// holds the asks DMed to them.
			"app_home": map[string]any{"home_tab_enabled": true, "messages_tab_enabled": true, "messages_tab_read_only_enabled": false},
		},
		"oauth_config": oauth,
		"settings":     settings,
	}
}
