package bot

import "encoding/json"

// Scopes are the bot token scopes slackask needs: post and update its
// messages and ephemerals (chat:write), open DMs (im:write), resolve
// user groups of responders (usergroups:read), read user names
// (users:read), and find, after a crash, a message it posted but had not
// recorded yet (channels:history, groups:history, im:history).
var Scopes = []string{"chat:write", "im:write", "usergroups:read", "users:read", "channels:history", "groups:history", "im:history"}

// Manifest returns the Slack app manifest (JSON) to paste into "Create an
// app → From an app manifest": a bot user, Socket Mode, interactivity,
// the Home tab with the app_home_opened event, and Scopes. name is the app's display name ("slackask" when empty). It
// returns an error only if the manifest cannot be encoded.
func Manifest(name string) ([]byte, error) {
	if name == "" {
		name = "slackask"
	}
	m := map[string]any{
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
		"oauth_config": map[string]any{
			"scopes": map[string]any{"bot": Scopes},
		},
		"settings": map[string]any{
			"interactivity": map[string]any{"is_enabled": true},
			// app_home_opened: a person opened the Home tab (published then).
			"event_subscriptions":    map[string]any{"bot_events": []string{"app_home_opened"}},
			"socket_mode_enabled":    true,
			"org_deploy_enabled":     false,
			"token_rotation_enabled": false,
		},
	}
	return json.MarshalIndent(m, "", "  ")
}
