// Package devui is the web page of `slackask dev`: a small Slack client for
// the Slack emulator in internal/slackfake.
//
// The page shows the emulator's channels and DMs with their messages and
// threads, drawn from their Block Kit (header, section with fields and
// accessory, context, divider, actions, input, image; static and multi
// select menus with descriptions; buttons with primary/danger styles and
// confirm dialogs), the acting person's ephemeral messages and modals (text
// inputs with the app's response_action errors under them), and follows
// every change live over server-sent events fed by slackfake.Subscribe. The
// sidebar's picker and People list choose who acts, in the same
// conversation: each person sees their own picks of a message, as each
// person's Slack client keeps its own (slackfake keeps state per person). Every click goes through slackfake.Person
// (Select, Click, Type, Submit, Close), so the app under test receives the
// same Socket Mode payloads a real Slack would send it.
//
// Routes of UI (an http.Handler):
//
//	GET  /          the page (?as=USER&c=CHANNEL&thread=TS)
//	GET  /app       the page's live regions, for the script to swap in
//	GET  /events    server-sent events, one "change" per emulator event
//	POST /act       an action as a person: {as, kind: select|clear|click|submit|close,
//	                channel, ts | viewId, blockId, actionId, values, inputs}
//	GET  /static/…  the script and the style sheet (embedded, no build step)
//
// Text is never trusted: Names.Mrkdwn turns Slack mrkdwn into HTML from
// escaped pieces and a fixed set of tags, html/template renders the page,
// the script builds no markup from strings, and a Content-Security-Policy
// allows only the page's own script. Requests whose Host is not localhost
// or an IP address are refused (DNS rebinding), and /act takes only
// same-origin JSON.
package devui
