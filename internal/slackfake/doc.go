// Package slackfake is an in-process stand-in for Slack, faithful enough to
// run the real slack-go client (Web API and Socket Mode) against it in tests.
//
// A Server answers the Web API methods a Socket Mode bot uses (chat.*,
// views.*, conversations.open, conversations.info, users.info, usergroups.users.list, auth.test, auth.teams.list,
// apps.connections.open), checks Block Kit payloads against Slack's limits the
// way Slack does (invalid_blocks with json-pointer messages), serves Socket
// Mode WebSockets (hello, pings, envelopes, acks, disconnect) and lets a test
// play a person: a Person keeps the client-side state of each message and
// modal exactly as a Slack client does and sends block_actions,
// view_submission and view_closed payloads built the way Slack builds them.
//
// Socket Mode is as strict as Slack where a client can get it wrong: each
// envelope goes to exactly one live connection, in turn (Sockets); an 11th
// connection gets a too_many_websockets disconnect instead of hello;
// apps.connections.open is rate limited (Config.ConnectionsOpenPerMinute,
// HTTP 429 with Retry-After); an interactive envelope is sent once and never
// resent, acked or not; and a block_actions or view_submission not acked
// within Config.AckTimeout is recorded as an error the person saw
// (FailedInteractions, UnackedInteractions). FailNextSockets, Cut,
// CutSocket and DisconnectSocket end connections at chosen instants.
//
// An ack is accepted on any live connection of the app, not only on the one
// its envelope went to: pending envelopes are app-wide. Slack documents
// envelope ids as unique to the app and payloads as sent to any of its
// connections; whether it accepts an ack on another connection than the
// envelope's is not documented. Nothing is read on a connection after its
// client's close frame, so an ack sent there is lost, as a websocket peer
// would have it. DeliverAtClientClose makes an envelope cross a client's
// close frame, the case where only another connection can ack it.
//
// Many workspaces (teams.go, oauth.go): AddTeam adds workspaces, in an
// Enterprise Grid org or not; Approve (or GET /oauth/v2/authorize) plays
// the person installing the app and oauth.v2.access exchanges the code
// (client credentials, redirect_uri, single-use 10-minute codes, PKCE S256)
// for a bot token of that team, or of the whole org for an org-wide
// install; with Config.TokenRotation tokens expire (token_expired) and
// refresh tokens rotate. A token reaches only its own team's channels and
// people. Uninstall and RevokeTokens deliver app_uninstalled and
// tokens_revoked.
//
// Typical use:
//
//	srv, _ := slackfake.New(slackfake.Config{})
//	defer srv.Close()
//	srv.AddUser("U1", "alice")
//	srv.AddChannel("C1", "general")
//	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(srv.APIURL()))
//	go socketmode.New(api).RunContext(ctx) // the bot under test
//	_ = srv.WaitConnected(ctx, 1)
//	// … the bot posts a question; then:
//	msgs := srv.Messages("C1")
//	_, err := srv.Person("U1").Select(ctx, "C1", msgs[0].TS, slackfake.ByActionPrefix("ask1:"), "Blue")
//
// The package itself imports only the standard library and
// gorilla/websocket; its tests use slack-go and goleak.
package slackfake
