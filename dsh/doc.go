// Package dsh lets people answer the questions of deepseek-harness agents in
// Slack. A Bridge is a "connected client" of a dsh web host: it listens on
// the host's downlink-only event mux (GET /api/events.mux), turns every
// question/requested frame into an ask of an interaction.AskService, and
// when the ask ends replies with POST /api/respond: the answer, or a
// "cancelled" error when a person cancelled, nobody answered in time or the
// ask was withdrawn. When the host settles a question first (another client
// answered, the turn was interrupted) the ask is withdrawn with a note.
//
// Durable state lives in the AskService, not in the bridge: the question's
// rpcId is the ask's idempotency key ("dsh:" + rpcId), so the host's replay
// of pending questions after a reconnect or a slackask restart re-attaches
// to the existing ask instead of posting again; and the Slack thread of a
// dsh session (agent.id "dsh:" + sessionId) is found again from
// AskService.List at start.
//
// The protocol is described in the shared notes on the dsh host; package
// dshtest holds a stand-in host for tests.
package dsh
