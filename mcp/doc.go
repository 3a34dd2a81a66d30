// Package mcp is slackask's Model Context Protocol front door: any
// MCP-speaking agent can ask a person a question in Slack and wait for the
// answer.
//
// The server offers two tools. ask_user_question takes the
// user-interaction seam's request (questions with id, question, header,
// detail, options and multiSelect; multi_select is accepted too) plus
// optional channel, user, timeout and waitSeconds; unknown fields are an
// INVALID_QUESTION error naming the nearest known one. A call creates an ask
// through an [interaction.AskService] (with [interaction.AskAndWait]), waits
// until it ends and returns the answer both as structured content and as the
// compact JSON text {"answers":[…]}. An ask that ends without an answer, or a
// request that cannot be asked, is a tool error whose text starts with the
// seam's error code (ASK_CANCELLED, ASK_TIMEOUT, ASK_ABORTED,
// INVALID_QUESTION, EMPTY_QUESTIONS, SLACK_ERROR…).
//
// People take longer than agents' tool calls may last. When waitSeconds
// passes, or the client cuts the call because it timed out, the question
// stays open and the result (not an error) says "Still waiting" with the
// ask id; get_answer (id, optional waitSeconds) later returns the answer,
// the same pending result, or the error code. How a call that ends early is
// told apart:
//
//   - notifications/cancelled whose reason speaks of a timeout ("Request
//     timed out", MCP error -32001, "context deadline exceeded"): kept open;
//   - notifications/cancelled with any other reason, or none: withdrawn (the
//     ask ends as aborted and the Slack message says so);
//   - an HTTP request carrying the call that drops without such a
//     notification within a short grace: kept open. Up to protocol
//     revision 2025-11-25 disconnection is not cancellation; from
//     2026-07-28 a closed stream is the only signal, for a timeout and a
//     deliberate stop alike, and losing an answer is the worse mistake;
//   - the stdio client exiting, the HTTP session deleted, or the end of the
//     server (Options.Context, ServeStdio's ctx): withdrawn.
//
// The SDK drops the reason of notifications/cancelled, so [Handler] and
// [ServeStdio] read it off the wire first; a server from [NewServer] on
// another transport withdraws on every cancel.
//
// While a call waits, the server sends progress notifications when the
// client asked for them (a progress token).
//
// [NewServer] builds the server, [Handler] serves it over streamable HTTP and
// [ServeStdio] over a pair of streams (slackask mcp).
package mcp
